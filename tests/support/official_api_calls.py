"""The official code's API calls for one row, reimplemented from their source and sent through the providers' own SDKs
to a loopback server, so a test compares field by field what a backend sends with what the official code sent:
MMLongBench's Gemini wrapper (`vlm_model/gemini.py`, EdinburghNLP/MMLongBench at 26197d2) and MMNeedle's Claude 3
Opus call (`needle.py`, Wang-ML-Lab/multimodal-needle-in-a-haystack)."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from typing import Any

from PIL import Image

from harness.api import GenerationSettings, Request, Response
from harness.inputs.prompts import messages_from_prompt
from harness.models.shared.api_client.calls import ApiModel
from tests.support.anthropic_server import AnthropicServer
from tests.support.gemini_server import GeminiServer
from tests.support.model_requests import encode_image, image_ref, make_request


def _png_io(image: Image.Image) -> io.BytesIO:
    """`model_utils.py:48-52` (`image_to_io`): saved as PNG, seek(0)."""
    out = io.BytesIO()
    image.save(out, format="PNG")
    out.seek(0)
    return out


def official_truncate_images(text: str, image_list: list[Any], max_image_num: int | None) -> tuple[str, list[Any]]:
    """`model_utils.py:62-108` (`truncate_images`): the last `max_image_num` images kept, each earlier `<image>` marker
    replaced by nothing."""
    if max_image_num is None or len(image_list) <= max_image_num:
        return text, image_list
    segments = re.split(r"(<image>)", text)
    remove_count = len(image_list) - max_image_num
    assert segments.count("<image>") == len(image_list)
    new_segments, removed = [], 0
    for segment in segments:
        if segment == "<image>" and removed < remove_count:
            new_segments.append("")
            removed += 1
        else:
            new_segments.append(segment)
    return "".join(new_segments), image_list[-max_image_num:]


def official_resize_max_size(image_list: list[Image.Image], max_image_size: int) -> list[Image.Image]:
    """`model_utils.py:26-45` (`resize_image_max_size`): an image with a side over `max_image_size` resized (LANCZOS)
    so that its longer side is that."""
    out = []
    for img in image_list:
        width, height = img.size
        if width <= max_image_size and height <= max_image_size:
            out.append(img)
            continue
        if width > height:
            size = (max_image_size, min(int(max_image_size / width * height), max_image_size))
        else:
            size = (min(int(max_image_size / height * width), max_image_size), max_image_size)
        out.append(img.resize(size, Image.Resampling.LANCZOS))
    return out


def official_gemini_request(
    server: GeminiServer,
    model_name: str,
    text: str,
    images: list[bytes],
    gen_max: int,
    *,
    max_image_num: int | None = None,
    max_image_size: int | None = None,
) -> None:
    """The official wrapper's call for one row, sent through google-genai to `server`: `prepare_inputs`
    (`gemini.py:67-84`: `--max_image_num` and `--max_image_size` as run_api.sh gives them at 64K/128K), `format_chat`
    (`:54-64`), `upload_content` (`:91-119`: each image through `files.upload` with mime type image/png) and `generate`
    (`:122-149`: the config per model series, `:126-138`). The rate-limit sleeps and `call_api`'s retries change
    nothing sent."""
    from google import genai
    from google.genai.types import GenerateContentConfig, HttpOptions

    client = genai.Client(api_key="test-key", http_options=HttpOptions(base_url=server.base_url, api_version="v1beta"))
    text, kept = official_truncate_images(text, images, max_image_num)  # gemini.py:70-71
    rgb = [Image.open(io.BytesIO(data)).convert("RGB") for data in kept]  # :73
    if max_image_size is not None:  # :75-77
        rgb = official_resize_max_size(rgb, max_image_size)
    image_list = [_png_io(image) for image in rgb]  # :80
    content, image_idx, contents = re.split(r"(<image>)", text), 0, []
    for c in content:  # format_chat, gemini.py:55-63
        if c == "<image>":
            contents.append({"mime_type": "image/png", "image": image_list[image_idx]})
            image_idx += 1
        else:
            contents.append(c)
    new_contents: list[Any] = []
    for c in contents:  # upload_content, gemini.py:96-118 (in order here: the pool changes nothing sent)
        if isinstance(c, str):
            new_contents.append(c)
        else:
            c["image"].seek(0)  # upload_new_seek, gemini.py:86-89
            new_contents.append(client.files.upload(file=c["image"], config={"mime_type": c["mime_type"]}))
    temperature, top_p = 1.0, 1.0  # arguments.py:34-35 defaults, which run_api.sh never changes
    if any(series in model_name for series in ["gemini-2.0-flash-thinking", "gemini-2.5-pro", "gemini-2.5-flash"]):
        config = GenerateContentConfig(temperature=temperature, top_p=top_p, candidate_count=1)
    elif model_name == "gemini-2.0-flash-001":
        config = GenerateContentConfig(
            temperature=temperature, top_p=top_p, max_output_tokens=gen_max, candidate_count=1
        )
    client.models.generate_content(model=model_name, contents=new_contents, config=config)


def resolved_uploads(server: GeminiServer, body: dict[str, Any]) -> dict[str, Any]:
    """A generateContent body with each file URI replaced by what the upload under it held (the URIs are the
    server's names: two uploads of the same bytes get two)."""
    body = dict(body)
    contents = []
    for turn in body["contents"]:
        parts = []
        for part in turn["parts"]:
            file = part.get("fileData") or part.get("file_data")
            if file is not None:
                uri = file.get("fileUri") or file.get("file_uri")
                mime, data = server.file_bytes(uri)
                part = {"file": (file.get("mimeType") or file.get("mime_type"), mime, data)}
            parts.append(part)
        contents.append({**turn, "parts": parts})
    body["contents"] = contents
    return body


GEMINI_ROW_TEXT = "<image>#id=r1 Which of these shows a cat? <image><image>Answer the question.<image>"


def row_images() -> list[bytes]:
    return [
        encode_image((200, 30, 30), (16, 12), "JPEG"),
        encode_image((20, 40, 220), (10, 14), "PNG"),
        encode_image((30, 180, 60), (20, 20), "GIF"),  # a palette image: made RGB before it is saved as PNG
        encode_image((90, 90, 90), (8, 8), "WEBP"),
    ]


def row_request(images: list[bytes], max_gen_toks: int, *, seed: int | None = None) -> Request:
    """The row of `GEMINI_ROW_TEXT`, greedy, as an MMLongBench task asks (`seed`: the run's, which no official call
    sent)."""
    refs = [image_ref(data) for data in images]
    return Request(
        task="mmlongbench_vh_single_8k",
        doc_id=0,
        sample_id="r1",
        messages=messages_from_prompt(GEMINI_ROW_TEXT, refs),
        settings=GenerationSettings(max_gen_toks=max_gen_toks, seed=seed),
        text_tokens=12,
        image_tokens=(64,) * len(refs),
    )


def needle_instruction(seq_length: int, n: int, caption: str | list[str]) -> str:
    """`needle.py:278-292` (Wang-ML-Lab/multimodal-needle-in-a-haystack): one needle's instruction, or (a list of
    captions) several needles'."""
    img_str = seq_length > 1 and "images" or "image"
    subimage_str = n > 1 and "subimages" or "subimage"
    if isinstance(caption, str):
        prompt = (
            f"Given {seq_length} {img_str} indexed from 1 to {seq_length}, each divided into {n}*{n} {subimage_str}, "
            "identify the subimage that best matches the provided caption. Respond with 'index, row, column' and "
            "nothing else. For example, '1, 2, 3' indicates the subimage in the first image, second row, and third "
            "column. If no match is found, respond only with '-1'."
        )
        return prompt + "\n" + "Caption: " + caption
    output_format = "; ".join(f"index_{i + 1}, row_{i + 1}, column_{i + 1}" for i in range(len(caption)))
    prompt = (
        f"Given {seq_length} {img_str} indexed from 1 to {seq_length}, each divided into {n}*{n} {subimage_str}, "
        f"identify the subimages that best match the provided {len(caption)} captions. Respond in the format: "
        f"{output_format}. Only provide this information. For example, '1, 2, 3' indicates the subimage in the first "
        "image, second row, and third column. If no subimage matches a caption, respond with '-1' for that caption."
    )
    return prompt + "".join(f"\nCaption_{i + 1}: {text}" for i, text in enumerate(caption))


def needle_call(server: AnthropicServer, images: list[bytes], instruction: str) -> None:
    """`needle.py:50-52` (the client) and `:149-181` (the call) for one row, sent through Anthropic's SDK to `server`:
    each image file's bytes base64-encoded (`:262-268`) in an image block with media type image/jpeg, then the
    instruction as one text block; `max_tokens=300` and nothing else."""
    import anthropic

    client = anthropic.Anthropic(api_key="test-key", base_url=server.base_url)
    messages = [{"role": "user", "content": []}]
    for data in images:
        messages[0]["content"].append(
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/jpeg",
                    "data": base64.b64encode(data).decode("utf-8"),
                },
            }
        )
    messages[0]["content"].append({"type": "text", "text": instruction})
    client.messages.create(model="claude-3-opus-20240229", max_tokens=300, messages=messages)


def _side_by_side(
    official: GeminiServer | AnthropicServer,
    ours: GeminiServer | AnthropicServer,
    send_officially: Callable[[], None],
    build: Callable[[str], ApiModel],
    request: Request,
) -> Response:
    """Our answer to `request` from the model `build(ours.base_url)` makes, after the official call
    (`send_officially`) to `official`; both servers stopped after."""
    official.start()
    ours.start()
    try:
        send_officially()
        model = build(ours.base_url)
        try:
            (response,) = model.generate([request])
        finally:
            model.close()
    finally:
        official.stop()
        ours.stop()
    return response


def gemini_side_by_side(
    served: str, build: Callable[[str], ApiModel], *, seed: int | None = None
) -> tuple[GeminiServer, GeminiServer, Response]:
    """(the official wrapper's server, ours, our answer): the row of `GEMINI_ROW_TEXT` sent by the wrapper's
    construction for the model `served` and by the model `build(base_url)` makes, each to its own loopback server."""
    images = row_images()
    official, ours = GeminiServer(), GeminiServer()
    response = _side_by_side(
        official,
        ours,
        lambda: official_gemini_request(official, served, GEMINI_ROW_TEXT, images, 128),
        build,
        row_request(images, 128, seed=seed),
    )
    return official, ours, response


def needle_side_by_side(
    build: Callable[[str], ApiModel], *, seed: int | None = None
) -> tuple[AnthropicServer, AnthropicServer, Response]:
    """(needle.py's server, ours, our answer): one MMNeedle row (three images, one needle's instruction) sent by
    `needle_call` and by the model `build(base_url)` makes, each to its own loopback server."""
    images = [encode_image((20 * i, 40, 200 - 20 * i), (32, 32), "JPEG") for i in range(3)]
    instruction = "#id=r1 " + needle_instruction(3, 2, "A cat sitting on a red sofa.")
    official, ours = AnthropicServer(), AnthropicServer()
    request = make_request("r1", [*images, instruction], settings=GenerationSettings(max_gen_toks=300, seed=seed))
    response = _side_by_side(official, ours, lambda: needle_call(official, images, instruction), build, request)
    return official, ours, response


def needle_gemini_body(images: list[bytes], instruction: str) -> dict[str, Any]:
    """The body `needle.py:54-62` posts for one row: `genai.GenerativeModel(v).generate_content(images + [instruction],
    stream=True, generation_config=GenerationConfig(candidate_count=1, stop_sequences=['x'], max_output_tokens=300))`,
    each image `Image.open(path)` of its JPEG file (`:258-259`). google-generativeai (deprecated, for retired models)
    is no dependency of this project, so this is its request transcribed, as version 0.8.4 (needle.py's
    `requirements.txt`) writes it: `types/content_types.py:97-123` (`_pil_to_blob`) sends an image opened from a file as that file's own
    bytes with its format's MIME type, inline, and the instruction as a text part, in one user turn; the
    GenerationConfig holds the three fields given, no temperature. Checked against that SDK itself (0.8.4 with
    `transport="rest"` and `client_options={"api_endpoint": <a loopback server>}`), which posted exactly these fields to
    `/v1beta/models/{model}:streamGenerateContent?$alt=json;enum-encoding=int` (its default transport, gRPC, carries
    the same `GenerateContentRequest` message). Image data here is the bytes, not their base64."""
    parts: list[dict[str, Any]] = [{"inlineData": {"mimeType": "image/jpeg", "data": data}} for data in images]
    parts.append({"text": instruction})
    return {
        "contents": [{"parts": parts, "role": "user"}],
        "generationConfig": {"candidateCount": 1, "stopSequences": ["x"], "maxOutputTokens": 300},
    }


def inline_bytes(body: dict[str, Any]) -> dict[str, Any]:
    """A generateContent body with each inline image's base64 data decoded (either alphabet) and its MIME type under
    one spelling: the SDKs differ in both, not in the field (proto JSON reads a field by its JSON name or its own:
    google-genai writes a Blob's `mime_type`, google.generativeai `mimeType`)."""
    contents = []
    for turn in body["contents"]:
        parts = []
        for part in turn["parts"]:
            if "inlineData" in part:
                blob = part["inlineData"]
                data = base64.urlsafe_b64decode(blob["data"].replace("+", "-").replace("/", "_"))
                part = {"inlineData": {"mimeType": blob.get("mimeType", blob.get("mime_type")), "data": data}}
            parts.append(part)
        contents.append({**turn, "parts": parts})
    return {**body, "contents": contents}

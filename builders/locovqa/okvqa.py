"""OK-VQA (Marino et al., 2019) in its released format: the question and annotation JSON files of the
val2014 split, and the COCO val2014 images they name.

    OKVQA_DIR/OpenEnded_mscoco_val2014_questions.json   {"questions": [{"image_id", "question", "question_id"}]}
    OKVQA_DIR/mscoco_val2014_annotations.json           {"annotations": [{"question_id", "image_id",
                                                          "answers": [{"answer", "raw_answer", ...} x 10]}]}
    COCO_DIR/val2014/COCO_val2014_<image_id:012d>.jpg

Every question becomes one content item; its distractors come from the other questions' images
(in-distribution, spec §1.2). A question whose image is missing stops the build, naming it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.release_bounds import SOURCE_ANNOTATION, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder, release_path
from builders.locovqa.images import SourceImage, file_image

QUESTIONS = "OpenEnded_mscoco_val2014_questions.json"
ANNOTATIONS = "mscoco_val2014_annotations.json"
COCO_VAL2014 = "val2014"


@dataclass(frozen=True)
class VqaItem:
    """One content image with its question (OK-VQA or MMStar)."""

    item_id: str
    image: str  # the key of its image
    question: str
    answer: str  # the canonical gold: OK-VQA's most frequent answer, MMStar's letter
    answers: tuple[str, ...]  # OK-VQA: the annotators' answers as released; MMStar: (letter,)
    choices: tuple[str, ...] = ()  # MMStar: the option texts, in letter order
    subset: str = ""  # MMStar: the source benchmark


def coco2014_key(image_id: int) -> str:
    return f"coco2014/COCO_val2014_{image_id:012d}.jpg"


def _load_json(folder: Path, name: str, what: str) -> object:
    path = release_path(folder, name, f"OK-VQA {what} {folder / name}")
    if not path.is_file():
        raise BuildError(f"OK-VQA {what} not found: {folder / name}")
    return parse_json(
        read_file(path, SOURCE_ANNOTATION, str(folder / name)), f"malformed OK-VQA {what} {folder / name}"
    )


def _once(seen: dict[int, int], qid: int, position: int, file: Path, records: str) -> None:
    """Note question `qid` at `records[position]` of `file`; a question id already noted is a `BuildError` naming
    both records (OK-VQA gives each question one id, one record in each file)."""
    if qid in seen:
        raise BuildError(
            f"{file}: question_id {qid} twice, the records {records}[{seen[qid]}] and {records}[{position}]"
        )
    seen[qid] = position


class OkVqaSource:
    """The OK-VQA questions with their answers and images; `items` sorted by question id."""

    name = "okvqa"

    def __init__(self, okvqa_dir: str | Path, coco_dir: str | Path) -> None:
        self.dir = Path(okvqa_dir)
        self.image_dir = Path(coco_dir) / COCO_VAL2014
        self._images = ReleaseFolder(self.image_dir)  # every image read stays inside it
        questions = _load_json(self.dir, QUESTIONS, "question file")
        annotations = _load_json(self.dir, ANNOTATIONS, "annotation file")
        if not isinstance(questions, dict) or not isinstance(questions.get("questions"), list):
            raise BuildError(f'malformed OK-VQA question file {self.dir / QUESTIONS}: expected {{"questions": [...]}}')
        if not isinstance(annotations, dict) or not isinstance(annotations.get("annotations"), list):
            raise BuildError(
                f'malformed OK-VQA annotation file {self.dir / ANNOTATIONS}: expected {{"annotations": [...]}}'
            )
        answers = {}
        answered_at: dict[int, int] = {}  # question id -> its record in `annotations`
        for i, ann in enumerate(annotations["annotations"]):
            try:
                qid, given = int(ann["question_id"]), [str(a["answer"]) for a in ann["answers"]]
            except (KeyError, TypeError, ValueError):
                raise BuildError(
                    f"{self.dir / ANNOTATIONS}: annotations[{i}] needs question_id and answers[{{answer}}]"
                ) from None
            _once(answered_at, qid, i, self.dir / ANNOTATIONS, "annotations")
            answers[qid] = given
        items = []
        asked_at: dict[int, int] = {}  # question id -> its record in `questions`
        for i, q in enumerate(questions["questions"]):
            try:
                qid, image_id, text = int(q["question_id"]), int(q["image_id"]), str(q["question"])
            except (KeyError, TypeError, ValueError):
                raise BuildError(
                    f"{self.dir / QUESTIONS}: questions[{i}] needs question_id, image_id and question"
                ) from None
            _once(asked_at, qid, i, self.dir / QUESTIONS, "questions")
            if qid not in answers or not answers[qid]:
                raise BuildError(
                    f"{self.dir / ANNOTATIONS}: no answers for question {qid} "
                    f"(questions[{i}] of {self.dir / QUESTIONS})"
                )
            counts = Counter(answers[qid])
            canonical = max(counts, key=lambda a: (counts[a], -answers[qid].index(a)))
            items.append(VqaItem(str(qid), coco2014_key(image_id), text, canonical, tuple(answers[qid])))
        if not items:
            raise BuildError(f"{self.dir / QUESTIONS} holds no questions")
        self.items = sorted(items, key=lambda item: int(item.item_id))
        self._check_images()

    def _path(self, key: str) -> Path:
        """The file of image `key`, inside the COCO image folder (`builders.core.release_paths`)."""
        return self._images.path(key.split("/", 1)[1], f"{self.image_dir}: image {key}")

    def _check_images(self) -> None:
        """Every question's image must be there: a missing one is an error naming the question ids."""
        if not self.image_dir.is_dir():
            raise BuildError(f"COCO val2014 image folder not found: {self.image_dir} (OK-VQA's images)")
        missing = [item for item in self.items if not self._path(item.image).is_file()]
        if missing:
            named = ", ".join(f"question {m.item_id} ({self._path(m.image).name})" for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise BuildError(f"{len(missing)} OK-VQA image(s) missing from {self.image_dir}: {named}{more}")

    @property
    def pool(self) -> list[str]:
        """The distinct content images, sorted: the in-distribution distractor pool."""
        return sorted({item.image for item in self.items})

    def image(self, key: str) -> SourceImage:
        return file_image(key, self._path(key))

    def fingerprint_parts(self) -> list[Path]:
        return [self.dir / QUESTIONS, self.dir / ANNOTATIONS]

"""MileBench's 29 subsets (the paper's Table 6), the three ways each is presented, and the configs they make.

A subset is one folder of the authors' release (`<Name>/<Name>.json`, `<Name>-adv.json`, `images/`,
`combined_1_images/`). Each subset gives three configs:

- `{key}`: the test set, images interleaved with the text where the context names them (Table 2);
- `{key}_combined`: the Combined-image Set, every image of a sample merged into one captioned grid placed
  before the instruction, the text naming them `<Image i>` (the paper's §4.3.4, `data/combine_images.py`);
- `{key}_adv`: the adversarial set (`<Name>-adv.json`: shuffled options, paraphrased answers; Table 3).

The scorer family of each subset is what the official `evaluate.py` dispatches to: the two needle subsets
by name (a whitespace-token match), MMCoQA by name (a substring match), then the release's `question_type`:
`open-ended` is ROUGE-L, `multi-choice` is option matching. The family is fixed here from Table 6 so the
task files can name their metrics; the builder checks the release agrees.
"""

from __future__ import annotations

from dataclasses import dataclass

MULTIPLE_CHOICE = "multiple_choice"
ROUGE_L = "rouge_l"
NEEDLE = "needle"
SUBSTRING = "substring"
FAMILIES = (MULTIPLE_CHOICE, ROUGE_L, NEEDLE, SUBSTRING)

TEMPORAL = "Realistic Temporal"
SEMANTIC = "Realistic Semantic"
DIAGNOSTIC = "Diagnostic"

INTERLEAVED = "interleaved"
COMBINED = "combined"
TEST = "test"
ADV = "adv"


@dataclass(frozen=True)
class Subset:
    name: str  # the release folder and file stem, as `eval.sh` spells it
    key: str  # our config key (configs are lower-case: `builders build --configs` lower-cases names)
    display: str  # Table 6's dataset name
    task_id: str  # T-1 ... T-4, S-1 ... S-5, N-1, N-2, I-1
    category: str
    family: str
    samples: int  # rows in the release (Table 6)
    archive: int  # MileBench_part{archive}.tar.gz holds it

    @property
    def question_type(self) -> str:
        """The release's `meta_data.question_type` the official dispatch needs for this family."""
        return "multi-choice" if self.family == MULTIPLE_CHOICE else "open-ended"

    @property
    def lettered(self) -> bool:
        """Whether the prompt's choice list carries letters: GPR1200's does not (more than 26 options)."""
        return self.name != "GPR1200"


def _s(
    name: str,
    key: str,
    display: str,
    task_id: str,
    category: str,
    archive: int,
    family: str = MULTIPLE_CHOICE,
    samples: int = 200,
) -> Subset:
    return Subset(name, key, display, task_id, category, family, samples, archive)


SUBSETS: tuple[Subset, ...] = (
    _s("ActionLocalization", "action_localization", "Action Localization", "T-1", TEMPORAL, 0),
    _s("ActionPrediction", "action_prediction", "Action Prediction", "T-1", TEMPORAL, 0),
    _s("ActionSequence", "action_sequence", "Action Sequence", "T-1", TEMPORAL, 0),
    _s("ObjectExistence", "object_existence", "Object Existence", "T-2", TEMPORAL, 3),
    _s("ObjectInteraction", "object_interaction", "Object Interaction", "T-2", TEMPORAL, 3),
    _s("MovingAttribute", "moving_attribute", "Moving Attribute", "T-2", TEMPORAL, 2),
    _s("ObjectShuffle", "object_shuffle", "Object Shuffle", "T-2", TEMPORAL, 3),
    _s("EgocentricNavigation", "egocentric_navigation", "Egocentric Navigation", "T-3", TEMPORAL, 1),
    _s("MovingDirection", "moving_direction", "Moving Direction", "T-3", TEMPORAL, 2),
    _s("CounterfactualInference", "counterfactual_inference", "Counterfactual Inference", "T-4", TEMPORAL, 1),
    _s("StateChange", "state_change", "State Change", "T-4", TEMPORAL, 3),
    _s("CharacterOrder", "character_order", "Character Order", "T-4", TEMPORAL, 0),
    _s("SceneTransition", "scene_transition", "Scene Transition", "T-4", TEMPORAL, 3),
    _s("WebQA", "webqa", "Webpage QA", "S-1", SEMANTIC, 5),
    _s("TQA", "tqa", "Textbook QA", "S-1", SEMANTIC, 5),
    _s("MultiModalQA", "multimodalqa", "Complex Multimodal QA", "S-1", SEMANTIC, 2),
    _s("WikiVQA", "wikivqa", "Long Text with Images QA", "S-1", SEMANTIC, 5),
    _s("SlideVQA", "slidevqa", "Slide QA", "S-2", SEMANTIC, 4),
    _s("OCR-VQA", "ocr_vqa", "OCR QA", "S-2", SEMANTIC, 4),
    _s("DocVQA", "docvqa", "Document QA", "S-2", SEMANTIC, 1),
    _s("Spot-the-Diff", "spot_the_diff", "Visual Change Captioning (Spot-the-Diff)", "S-3", SEMANTIC, 4, ROUGE_L),
    _s("CLEVR-Change", "clevr_change", "Visual Change Captioning (CLEVR-Change)", "S-3", SEMANTIC, 1, ROUGE_L),
    _s("IEdit", "iedit", "Visual Relationship Expressing", "S-3", SEMANTIC, 2, ROUGE_L),
    _s("MMCoQA", "mmcoqa", "Multimodal Dialogue", "S-4", SEMANTIC, 2, SUBSTRING),
    _s("ALFRED", "alfred", "Conversational Embodied Dialogue", "S-4", SEMANTIC, 0, ROUGE_L),
    _s("nuscenes", "nuscenes", "Space Understanding", "S-5", SEMANTIC, 3),
    _s("TextNeedleInAHaystack", "text_needle", "Text Needle In A Haystack", "N-1", DIAGNOSTIC, 5, NEEDLE, 320),
    _s("ImageNeedleInAHaystack", "image_needle", "Image Needle In A Haystack", "N-2", DIAGNOSTIC, 2, NEEDLE, 320),
    _s("GPR1200", "gpr1200", "Image Retrieval", "I-1", DIAGNOSTIC, 1, MULTIPLE_CHOICE, 600),
)

SUBSET_BY_KEY: dict[str, Subset] = {s.key: s for s in SUBSETS}
SUBSET_BY_NAME: dict[str, Subset] = {s.name: s for s in SUBSETS}

# Table 2's task columns in its order, each with the subsets it averages.
TASK_IDS: tuple[str, ...] = ("T-1", "T-2", "T-3", "T-4", "S-1", "S-2", "S-3", "S-4", "S-5", "N-1", "N-2", "I-1")
REALISTIC_TASKS = TASK_IDS[:9]
DIAGNOSTIC_TASKS = TASK_IDS[9:]

# The image-count levels (§4.3.1; `evaluate.py` `get_image_quantity_level`, on the release's image count).
LEVELS = ("Few", "Medium", "Many")


def image_quantity_level(num_images: int) -> str:
    """Few (2-5), Medium (6-31), Many (32-109), by the official rule: < 6 Few, > 31 Many, else Medium."""
    if num_images < 6:
        return "Few"
    if num_images > 31:
        return "Many"
    return "Medium"


@dataclass(frozen=True)
class Config:
    subset: Subset
    mode: str  # INTERLEAVED | COMBINED
    split: str  # TEST | ADV

    @property
    def name(self) -> str:
        suffix = {(INTERLEAVED, TEST): "", (COMBINED, TEST): "_combined", (INTERLEAVED, ADV): "_adv"}
        return self.subset.key + suffix[(self.mode, self.split)]

    @property
    def release_file(self) -> str:
        """The annotation file under the subset's folder."""
        return f"{self.subset.name}-adv.json" if self.split == ADV else f"{self.subset.name}.json"


# Canonical order: the Table 2 set, then the Combined-image Set, then the adversarial set, each in Table 6 order.
CONFIGS: dict[str, Config] = {
    cfg.name: cfg
    for mode, split in ((INTERLEAVED, TEST), (COMBINED, TEST), (INTERLEAVED, ADV))
    for cfg in (Config(subset, mode, split) for subset in SUBSETS)
}

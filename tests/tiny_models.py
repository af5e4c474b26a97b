"""One tiny-model factory for the tests: any registered model of the plugin, built in this process as
fairseq-train builds it (its registered architecture and task options, only the width narrowed), from its real
task constructed around a small dictionary (no data directory), and a batch of the ``net_input`` that task gives::

    model = tiny_model("segabert_tiny")                   # (tiny_args, tiny_task, build: step by step)
    model = tiny_model("xlnet_tiny", *as_options(mem_len=4))  # config fields as options
    net_input = tiny_batch(model, rows=3)                 # right-padded, with the segment indexes
    features = model.token_features(**net_input)          # (3, T, 32)

``RECIPES`` holds, per registered model, its pre-training task, its width options, how its task lays a batch out
and which variants (architecture and options) ``tests/models/test_every_model.py`` checks; ``plugin_models`` finds
the registered models, so a model without a recipe fails that test by name."""
import argparse
import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import TASK_DATACLASS_REGISTRY, TASK_REGISTRY

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.data.permutation_lm import permutation_sample
from segatron_fairseq.segments import MASK_SYMBOL

PAD = 1
WORDS = 36  # 40 symbols with fairseq's four specials


def dictionary(*appended: str, words: int = WORDS) -> Dictionary:
    """<s> <pad> </s> <unk>, ``words`` words w0, w1, ..., then ``appended``."""
    vocabulary = Dictionary()
    for i in range(words):
        vocabulary.add_symbol(f"w{i}")
    for symbol in appended:
        vocabulary.add_symbol(symbol)
    return vocabulary


# ---- batches as each task lays them out ----------------------------------------------------------------------

def _lengths(rows: int, length: int, padded: bool) -> List[int]:
    """Row lengths: the first row full, the others shorter when ``padded``."""
    return [length - (2 * i if padded else 0) for i in range(rows)]


def _segment_indexes(lengths: Sequence[int], width: int, g: torch.Generator) -> Dict[str, torch.Tensor]:
    """(B, T) paragraph, sentence and token indexes of random sentence and paragraph starts, 0 at padding."""
    indexes = {name: torch.zeros(len(lengths), width, dtype=torch.long) for name in ("paragraph", "sentence", "token")}
    for row, length in enumerate(lengths):
        paragraph = sentence = token = 0
        for t in range(length):
            if t and torch.rand(1, generator=g) < 0.25:
                token, sentence = 0, sentence + 1
                if torch.rand(1, generator=g) < 0.4:
                    paragraph, sentence = paragraph + 1, 0
            indexes["paragraph"][row, t], indexes["sentence"][row, t], indexes["token"][row, t] = (
                paragraph, sentence, token)
            token += 1
    return {f"{name}_index": index for name, index in indexes.items()}


def _right_padded_tokens(lengths: Sequence[int], g: torch.Generator, first: Optional[int], last: Optional[int],
                         words: int = WORDS) -> torch.Tensor:
    """(B, max length) ids: ``first`` and ``last`` (when given) around random words, then padding."""
    width = max(lengths)
    tokens = torch.full((len(lengths), width), PAD)
    for row, length in enumerate(lengths):
        tokens[row, :length] = torch.randint(4, 4 + words, (length,), generator=g)
        if first is not None:
            tokens[row, 0] = first
        if last is not None:
            tokens[row, length - 1] = last
    return tokens


def encoder_batch(model, rows: int = 3, length: int = 10, padded: bool = True, seed: int = 0) -> dict:
    """What a SegaBERT-style task gives (segabert_mlm, cloze_lm, the fine-tuning tasks): right-padded
    ``src_tokens`` (B, T) opening with <s> and closing with the model's input end, ``src_lengths`` and the (B, T)
    segment indexes (0 at padding)."""
    g = torch.Generator().manual_seed(seed)
    lengths = _lengths(rows, length, padded)
    end = Dictionary().index(model.input_end_symbol)  # a special symbol: the same id in every dictionary
    tokens = _right_padded_tokens(lengths, g, 0, end)
    return {"src_tokens": tokens, "src_lengths": torch.tensor(lengths), **_segment_indexes(lengths, length, g)}


def stream_batch(model, rows: int = 3, length: int = 10, padded: bool = False, seed: int = 0) -> dict:
    """What segatron_lm gives: (B, T) rows of the token stream (never padded) with (B, T) bool sentence and
    paragraph starts."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 4 + WORDS, (rows, length), generator=g)
    sentence = torch.rand(rows, length, generator=g) < 0.25
    paragraph = sentence & (torch.rand(rows, length, generator=g) < 0.4)
    return {"src_tokens": tokens, "sentence_starts": sentence, "paragraph_starts": paragraph}


def permutation_batch(model, rows: int = 3, length: int = 10, padded: bool = False, seed: int = 0) -> dict:
    """What xlnet_plm gives: stream rows with a (B, T, T) permutation mask, (B, P, T) one-hot targets, (B, T)
    segment ids and starts, the first half cached as memory (``reuse_len``)."""
    batch = stream_batch(model, rows, length, seed=seed)
    rng = np.random.default_rng(seed)
    masks, mappings = [], []
    predicted = 3
    for _ in range(rows):
        mask, positions = permutation_sample(length, length // 2, predicted, rng)
        masks.append(torch.from_numpy(mask))
        mappings.append(torch.nn.functional.one_hot(torch.from_numpy(positions), length).float())
    segment_ids = torch.zeros(rows, length, dtype=torch.long)
    segment_ids[:, length // 2 + 1:] = 1
    return {**batch, "perm_mask": torch.stack(masks), "target_mapping": torch.stack(mappings),
            "segment_ids": segment_ids, "reuse_len": length // 2}


def short_sequence_batch(model, rows: int = 3, length: int = 6, padded: bool = True, seed: int = 0,
                         sequences: int = 3) -> dict:
    """What cross_thought_mlm gives: (B, M, L) short sequences of the token stream, the last one of each row
    right-padded when ``padded``."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 4 + WORDS, (rows, sequences, length), generator=g)
    if padded:
        for row in range(1, rows):
            tokens[row, -1, length - 2 * row:] = PAD
    return {"src_tokens": tokens}


# ---- what each registered model is built with ------------------------------------------------------------------

DECODER_WIDTH = ("--decoder-layers", "2", "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64",
                 "--decoder-attention-heads", "4")
ENCODER_WIDTH = ("--encoder-layers", "2", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
                 "--encoder-attention-heads", "4")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How the tests build one registered model.

    Attributes:
        task: the registered task that pre-trains it (constructed around ``dictionary``).
        width: the options narrowing any of its architectures to 2 layers of width 32.
        batch: ``batch(model, rows, length, padded, seed)`` -> the ``net_input`` its task gives.
        appended: symbols its task adds to the corpus dictionary.
        variants: name -> (architecture, extra options) that ``test_every_model.py`` checks.
    """
    task: str
    width: Tuple[str, ...]
    batch: Callable[..., dict]
    variants: Dict[str, Tuple[str, Tuple[str, ...]]]
    appended: Tuple[str, ...] = ()


RECIPES = {
    "segatron_xl": Recipe("segatron_lm", DECODER_WIDTH + ("--decoder-head-dim", "8"), stream_batch, {
        "segatron_xl": ("segatron_xl_tiny", ()),
        "transformer_xl": ("transformer_xl_tiny", ()),
    }),
    "segabert": Recipe("segabert_mlm", ENCODER_WIDTH, encoder_batch, {
        "segabert": ("segabert_tiny", ()),
        "bert": ("segabert_bert_tiny", ("--num-token-types", "2")),
        "spanbert": ("segabert_bert_tiny", ("--span-boundary-objective", "--mask-span", "span")),
        "albert": ("segabert_albert_base", ("--factorized-embed-dim", "16")),
    }, (MASK_SYMBOL,)),
    "segabert_electra": Recipe("segabert_mlm", ENCODER_WIDTH, encoder_batch, {
        "electra": ("segabert_electra_tiny", ("--factorized-embed-dim", "16")),
    }, (MASK_SYMBOL,)),
    "xlnet": Recipe("xlnet_plm", ENCODER_WIDTH + ("--encoder-head-dim", "8"), permutation_batch, {
        "xlnet": ("xlnet_tiny", ()),
        "xlnet_segatron": ("xlnet_tiny", ("--positions", "segatron")),
    }),
    "cloze_two_tower": Recipe("cloze_lm", DECODER_WIDTH, encoder_batch, {
        "cloze_two_tower": ("cloze_two_tower_tiny", ()),
    }),
    "cross_thought": Recipe("cross_thought_mlm", ENCODER_WIDTH, short_sequence_batch, {
        "cross_thought": ("cross_thought_tiny", ()),
    }, (MASK_SYMBOL,)),
}


def plugin_models() -> List[str]:
    """Every registered model whose class is of this plugin."""
    return sorted(name for name, cls in MODEL_REGISTRY.items() if cls.__module__.startswith("segatron_fairseq."))


def recipe(model_name: str) -> Recipe:
    if model_name not in RECIPES:
        raise LookupError(f"tests/tiny_models.py has no recipe for the registered model {model_name!r}: give its "
                          f"task, width options, batch and variants in RECIPES")
    return RECIPES[model_name]


def variants() -> List[Tuple[str, str]]:
    """(model, variant) of every registered model: its recipe's variants, or the model's name alone."""
    found = []
    for name in plugin_models():
        found += [(name, variant) for variant in RECIPES[name].variants] if name in RECIPES else [(name, name)]
    return found


def as_options(**fields) -> List[str]:
    """Config fields as command-line options: ``combination_mask="none", segment_positions=True`` ->
    ``--combination-mask none --segment-positions`` (a store_true field given as True; False leaves it out)."""
    found = []
    for name, value in fields.items():
        flag = "--" + name.replace("_", "-")
        found += [flag] if value is True else [] if value is False else [flag, str(value)]
    return found


def tiny_args(arch: str, *extra, task: Optional[str] = None, width: Optional[Sequence[str]] = None):
    """fairseq-train's options (an ``argparse.Namespace``, the architecture applied) for a tiny ``arch``.

    Args:
        arch: a registered architecture of a plugin model.
        *extra: further command-line options (the task's or the model's); they win over the width options.
        task: the task (default: the model's pre-training task of ``RECIPES``).
        width: the width options (default: the recipe's).
    """
    kind = recipe(ARCH_MODEL_NAME_REGISTRY[arch])
    width = kind.width if width is None else width
    return options.parse_args_and_arch(options.get_training_parser(), [
        "data", "--user-dir", PLUGIN_DIR, "--task", task or kind.task, "--arch", arch, *width,
        *[str(option) for option in extra]])


def tiny_task(args, vocabulary: Optional[Dictionary] = None):
    """The registered task of ``args`` (a Namespace, or fairseq's omegaconf ``cfg``) constructed around
    ``vocabulary`` (default: ``dictionary`` with the symbols the model's recipe appends) instead of a data
    directory's."""
    if vocabulary is None:
        arch = args.arch if isinstance(args, argparse.Namespace) else args.model._name
        vocabulary = dictionary(*recipe(ARCH_MODEL_NAME_REGISTRY[arch]).appended)
    if isinstance(args, argparse.Namespace):
        return TASK_REGISTRY[args.task](TASK_DATACLASS_REGISTRY[args.task].from_namespace(args), vocabulary)
    return TASK_REGISTRY[args.task._name](args.task, vocabulary)


def build(model_cfg, task, seed: int = 0, dtype: torch.dtype = torch.float32):
    """``task.build_model(model_cfg)`` seeded, in eval mode and ``dtype``."""
    torch.manual_seed(seed)
    return task.build_model(model_cfg).to(dtype).eval()


def tiny_model(arch: str, *extra, seed: int = 0, dtype: torch.dtype = torch.float32,
               vocabulary: Optional[Dictionary] = None, **options):
    """The model of ``tiny_args(arch, *extra, **options)`` built by its task (``tiny_task``), seeded, in eval
    mode and ``dtype``."""
    args = tiny_args(arch, *extra, **options)
    return build(args, tiny_task(args, vocabulary), seed=seed, dtype=dtype)


def tiny_batch(model, rows: int = 3, length: int = 10, padded: bool = True, seed: int = 0) -> dict:
    """A pre-training ``net_input`` of ``rows`` rows for ``model`` (of ``tiny_model``), as its task lays it out."""
    name = next(name for name, cls in MODEL_REGISTRY.items() if type(model) is cls)
    return recipe(name).batch(model, rows=rows, length=length, padded=padded, seed=seed)

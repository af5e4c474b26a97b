"""Score a binarized split as one stream with a Segatron-XL / Transformer-XL
checkpoint: the loss of every token given all the tokens before it."""
from typing import Tuple

import numpy as np
import torch
from fairseq import checkpoint_utils

from segatron_fairseq.data.segment_indexed_dataset import SegmentIndexedDataset
from segatron_preprocess.corpus_format import paragraph_starts, sentence_starts


def read_stream(prefix: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tokens (N,) of the split ``prefix`` in order, and (N,) bools: whether
    each one starts a sentence / a paragraph."""
    corpus = SegmentIndexedDataset(prefix)
    token_index, sentence_index = corpus.index_array("token"), corpus.index_array("sentence")
    return (corpus.token_array().astype(np.int64), sentence_starts(token_index),
            paragraph_starts(token_index, sentence_index))


def stream_inputs(tokens: np.ndarray, sentence_start: np.ndarray, paragraph_start: np.ndarray,
                  eos: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the model reads to predict ``tokens``: ``[eos] + tokens[:-1]``, the
    input at position t being token t-1 with its flags (the leading eos starts
    both a sentence and a paragraph)."""
    return (np.concatenate([[eos], tokens[:-1]]), np.concatenate([[True], sentence_start[:-1]]),
            np.concatenate([[True], paragraph_start[:-1]]))


def stream_losses(model, tokens: np.ndarray, sentence_start: np.ndarray, paragraph_start: np.ndarray,
                  tgt_len: int) -> np.ndarray:
    """(N,) loss in nats of every token of the stream (``[eos] + tokens`` read,
    ``tokens`` predicted), segment by segment of ``tgt_len`` with the model's
    memory, as ``fairseq-eval-lm --batch-size 1`` scores a split. The model's
    evaluation memory is reset before and after, so calls are independent."""
    model.eval()
    model.reset_memory(training=False)
    source, source_sentence, source_paragraph = stream_inputs(tokens, sentence_start, paragraph_start, model.eos())
    device = next(model.parameters()).device
    losses = []
    try:
        with torch.no_grad():
            for start in range(0, len(tokens), tgt_len):
                cols = slice(start, start + tgt_len)
                features, _ = model(torch.from_numpy(source[cols])[None].to(device),
                                    sentence_starts=torch.from_numpy(source_sentence[cols])[None].to(device),
                                    paragraph_starts=torch.from_numpy(source_paragraph[cols])[None].to(device))
                target = torch.from_numpy(tokens[cols])[None].to(device)
                lprobs = model.get_normalized_probs((features, None), log_probs=True, sample={"target": target})
                losses.append(-lprobs.gather(-1, target[..., None])[0, :, 0].double().cpu().numpy())
    finally:
        model.reset_memory(training=False)
    return np.concatenate(losses)


def token_losses(checkpoint: str, tokens: np.ndarray, sentence_start: np.ndarray, paragraph_start: np.ndarray,
                 tgt_len: int) -> np.ndarray:
    """``stream_losses`` of the model saved in ``checkpoint``."""
    models, _ = checkpoint_utils.load_model_ensemble([checkpoint])
    return stream_losses(models[0], tokens, sentence_start, paragraph_start, tgt_len)

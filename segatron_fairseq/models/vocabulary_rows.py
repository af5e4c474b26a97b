"""The vocabulary rows of a pre-trained checkpoint restored into a model
built for fine-tuning.

The fine-tuning tasks append symbols to the pre-training corpus's dictionary
(``<mask>``, the cloze model's ``<sep>``), so the model they build has more
rows in its vocabulary tables (``EncoderInterface.vocabulary_tables``) than a
checkpoint of pre-training that did not know them (the cloze model's, XLNet's):

    checkpoint   embed_tokens (V, d)
    model        embed_tokens (V + 1, d)
    restored     checkpoint's V rows + the model's own initialisation of row V

Used by the models' ``upgrade_state_dict_named`` (the heads: ``TaskHeads.restore``).
"""
import logging
from typing import Dict

import torch
from fairseq.data import Dictionary

from segatron_fairseq.segments import MASK_SYMBOL, SEP_SYMBOL

logger = logging.getLogger(__name__)

FINETUNING_SYMBOLS = (SEP_SYMBOL, MASK_SYMBOL)  # what fine-tuning tasks may append to the pre-training dictionary


def appended_symbols(dictionary: Dictionary) -> int:
    """How many of ``dictionary``'s last symbols are ``FINETUNING_SYMBOLS``
    (appended to the pre-training dictionary by a fine-tuning task)."""
    count = 0
    while count < len(dictionary) - dictionary.nspecial and dictionary[len(dictionary) - 1 - count] in \
            FINETUNING_SYMBOLS:
        count += 1
    return count


def append_vocabulary_rows(state_dict: dict, prefix: str, tables: Dict[str, torch.Tensor], appended: int,
                           model_name: str) -> None:
    """Give each of ``tables`` (state-dict key without ``prefix`` -> this
    model's tensor, one row per dictionary symbol) that the checkpoint has
    with ``appended`` rows fewer the model's own rows for the appended
    symbols, the checkpoint's rows unchanged; any other difference in rows is
    refused (another corpus)."""
    for local, table in tables.items():
        key = prefix + local
        saved = state_dict.get(key)
        if saved is None or saved.size(0) == table.size(0):
            continue
        if saved.size(0) + appended != table.size(0) or saved.shape[1:] != table.shape[1:]:
            raise ValueError(f"the {model_name} checkpoint's {local} has {saved.size(0):,} rows, this model's "
                             f"{table.size(0):,} ({appended} fine-tuning symbols appended to the dictionary): the "
                             f"checkpoint was trained on another corpus than the one given (--pretrain-data)")
        state_dict[key] = torch.cat([saved, table.detach()[saved.size(0):].to(saved)])
        logger.info(f"{local}: {table.size(0) - saved.size(0)} row(s) appended for the fine-tuning symbols, "
                    f"initialised as this model's")

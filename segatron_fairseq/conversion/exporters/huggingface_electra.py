"""A pre-trained ``segabert_electra`` baseline (``--no-segment-positions``) as
two Hugging Face directories under the output: ``discriminator``
(``ElectraForPreTraining``) and ``generator`` (``ElectraForMaskedLM``), each
with its own copy of the shared embeddings and the tokenizer files. The
inverse of ``importers/electra.py``. A model sharing layers (``--share-encoder-layers``)
is written with each layer's copy of the shared tensors. A model with index tables has no
Hugging Face class, nor has a fine-tuned one (no generator) a pre-training one.
"""
import os
from typing import Dict, Optional

from torch import Tensor

from segatron_preprocess.atomic import atomic_path

from .huggingface_directory import layer_state, position_rows, tokenizer_files, warn_about_heads, write_directory
from .model_card import CheckpointFacts


def _check(model) -> None:
    if model.encoder.segment_positions:
        raise NotImplementedError("an ELECTRA model with index tables (segabert_electra_*) has no Hugging Face class; "
                                  "the electra_* baseline has")
    if model.generator is None or model.encoder.rtd_head is None:
        raise NotImplementedError("an ELECTRA model without its generator (fine-tuned) has no ElectraForPreTraining "
                                  "/ ElectraForMaskedLM pair")
    if getattr(model.args, "encoder_normalize_before", False):
        raise NotImplementedError("a pre-norm encoder (--encoder-normalize-before) has no ELECTRA class")
    if model.args.activation_fn != "gelu":
        raise NotImplementedError(f"--activation-fn {model.args.activation_fn} (ELECTRA's generator head: gelu)")


def _config(model, encoder, dictionary, architecture: str) -> Dict:
    args, layer = model.args, encoder.sentence_encoder.layers[0]
    return {"model_type": "electra", "architectures": [architecture], "vocab_size": len(dictionary),
            "embedding_size": encoder.embedding_dim, "hidden_size": layer.embed_dim,
            "num_hidden_layers": len(encoder.sentence_encoder.layers),
            "num_attention_heads": layer.self_attn.num_heads, "intermediate_size": layer.fc1.out_features,
            "hidden_act": args.activation_fn, "hidden_dropout_prob": args.dropout,
            "attention_probs_dropout_prob": args.attention_dropout,
            "layer_norm_eps": encoder.sentence_encoder.layernorm_embedding.eps, "pad_token_id": dictionary.pad(),
            "max_position_embeddings": args.max_positions,
            "type_vocab_size": encoder.token_type_embeddings.num_embeddings
            if encoder.token_type_embeddings is not None else 2}


def _electra_state(ours: Dict[str, Tensor], prefix: str, encoder, types: Tensor) -> Dict[str, Tensor]:
    """``electra.*`` of ``encoder``, whose state is under ``prefix`` (``encoder.`` or ``generator.``)."""
    e, layers = prefix + "sentence_encoder.", len(encoder.sentence_encoder.layers)
    state = {"electra.embeddings.word_embeddings.weight": ours[e + "embed_tokens.weight"],
             "electra.embeddings.position_embeddings.weight": position_rows(encoder.sentence_encoder),
             "electra.embeddings.token_type_embeddings.weight": types,
             "electra.embeddings.LayerNorm.weight": ours[e + "layernorm_embedding.weight"],
             "electra.embeddings.LayerNorm.bias": ours[e + "layernorm_embedding.bias"]}
    for kind in ("weight", "bias"):
        if f"{e}embedding_projection.{kind}" in ours:
            state[f"electra.embeddings_project.{kind}"] = ours[f"{e}embedding_projection.{kind}"]
    for layer in range(layers):
        state.update(layer_state(ours, f"{e}layers.{layer}.", f"electra.encoder.layer.{layer}."))
    return state


def export(model, dictionary, subwords, out_dir: str, facts: Optional[CheckpointFacts] = None) -> None:
    """Write ``out_dir`` (which must not exist) with ``discriminator/`` and
    ``generator/``: config.json, model.safetensors and the tokenizer files each."""
    warn_about_heads(model)
    _check(model)
    if os.path.lexists(out_dir):
        raise FileExistsError(f"{out_dir} exists; choose a new directory")
    # every layer's tensors, also those a layer-sharing model's state dict holds once (ELECTRA shares none)
    ours = {**{name: p.detach() for name, p in model.named_parameters(remove_duplicate=False)}, **model.state_dict()}
    types = ours.get("encoder.token_type_embeddings.weight")
    if types is None:
        types = ours["encoder.sentence_encoder.embed_tokens.weight"].new_zeros(2, model.encoder.embedding_dim)
    discriminator = _electra_state(ours, "encoder.", model.encoder, types)
    generator = _electra_state(ours, "generator.", model.generator, types)
    for kind in ("weight", "bias"):
        for name in ("dense", "dense_prediction"):
            discriminator[f"discriminator_predictions.{name}.{kind}"] = ours[f"encoder.rtd_head.{name}.{kind}"]
        generator[f"generator_predictions.dense.{kind}"] = ours[f"generator.lm_head.dense.{kind}"]
        generator[f"generator_predictions.LayerNorm.{kind}"] = ours[f"generator.lm_head.layer_norm.{kind}"]
    generator["generator_lm_head.weight"] = ours["generator.lm_head.weight"]
    generator["generator_lm_head.bias"] = ours["generator.lm_head.bias"]
    files, copies = tokenizer_files(dictionary, subwords, model.args.max_positions)
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    with atomic_path(out_dir) as staging:
        os.mkdir(staging)
        for name, encoder, state, architecture in (
                ("discriminator", model.encoder, discriminator, "ElectraForPreTraining"),
                ("generator", model.generator, generator, "ElectraForMaskedLM")):
            write_directory(os.path.join(staging, name), _config(model, encoder, dictionary, architecture), state,
                            files, copies, facts)

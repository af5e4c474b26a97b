"""The Segatron authors' own Segatron-XL (``SegaMemTransformerLM`` of github.com/rsvp-ai/segatron_aaai,
their fork of the original Transformer-XL code) as a variant of bench_segatron_xl.py.

Their code is not part of this project: ``--authors-code DIR`` names a checkout of that repository's
``segatron-xl`` folder (the one holding ``mem_transformer.py`` and ``utils/``), which goes on
``sys.path`` of the measuring process only. The model gets bench_segatron_xl.py's configuration and
synthetic stream, and each step does what their ``train.py`` (``train_sega``) does with one batch chunk:
time-first ``(T, B)`` tensors, the paragraph / sentence / token counters ``pst`` and the memories
returned by the model fed back into the next step, the per-token loss ``.float().mean().type_as(loss)``,
backward and an Adam step. Left out, as for our variants: gradient clipping, the learning-rate
schedule and the ``loss.item()`` of their running-loss log.
"""
import os
import sys

from bench_common import result, setup_device, time_training


def import_mem_transformer(code_dir: str):
    """Their ``mem_transformer`` module, imported from ``code_dir``."""
    import torch

    code_dir = os.path.abspath(code_dir)
    if not os.path.isfile(os.path.join(code_dir, "mem_transformer.py")):
        raise SystemExit(f"--authors-code {code_dir}: no mem_transformer.py there (expected the segatron-xl folder)")
    sys.path.insert(0, code_dir)
    # Workaround from our side: their utils/proj_adaptive_softmax.py parses torch.version.cuda at import
    # time (two constants it never uses), which is None in a CPU-only torch build. A placeholder version
    # is set for the import only. Nothing else in the import needs apex or a GPU.
    cuda_version = torch.version.cuda
    if cuda_version is None:
        torch.version.cuda = "0.0"
    try:
        import mem_transformer
    finally:
        torch.version.cuda = cuda_version
    if os.path.dirname(os.path.abspath(mem_transformer.__file__)) != code_dir:
        raise SystemExit(f"imported {mem_transformer.__file__}, not the one in {code_dir}")
    return mem_transformer


def init_weights(model, std: float = 0.02) -> None:
    """Initialization in the manner of their train.py (--init normal, --init_std 0.02): it also fills
    r_w_bias / r_r_bias, which their model creates uninitialized."""
    import torch
    from torch import nn

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.normal_(module.weight, 1.0, std)
                nn.init.zeros_(module.bias)
        for param in (model.r_w_bias, model.r_r_bias, getattr(model.crit, "cluster_weight", None)):
            if param is not None:
                nn.init.normal_(param, 0.0, std)


def measure_authors(args) -> dict:
    import torch
    from bench_segatron_xl import synthetic_stream

    mem_transformer = import_mem_transformer(args.authors_code)
    torch.manual_seed(0)
    device = setup_device(args.threads)
    cutoffs = ([int(c) for c in args.cutoffs.strip("[]() ").split(",")] if args.cutoffs
               else [args.vocab // 10, args.vocab // 2])
    # run_wt103_base_sega.sh's settings where bench_segatron_xl.py has no option: --adaptive (div_val 1,
    # tied embedding / softmax weights, tie_projs [False] + [True] * len(cutoffs)), dropatt 0, attn_type 0
    model = mem_transformer.SegaMemTransformerLM(
        args.vocab, args.layers, args.heads, args.dim, args.dim // args.heads, args.ffn, dropout=0.1, dropatt=0.0,
        tie_weight=True, d_embed=args.dim, div_val=1, tie_projs=[False] + [True] * len(cutoffs), pre_lnorm=False,
        tgt_len=args.tgt_len, ext_len=0, mem_len=args.mem_len, cutoffs=cutoffs, same_length=False, attn_type=0,
        clamp_len=-1)
    init_weights(model)
    model = model.to(device).train()

    # bench_segatron_xl.py's stream (synthetic_stream), batch by batch: row b of every (B, T) batch
    # continues row b of the previous one. Their data iterator gives each batch column a contiguous piece
    # of the corpus with running paragraph / sentence / token indexes (SegaVocab.encode_file); here the
    # starts become such running counters, carried from step to step. Per-column offsets do not matter:
    # the model only uses each column's maximum minus each value. The targets are our variants' (the
    # batch's tokens shifted by one), so the adaptive softmax sees the same clusters.
    shape = (args.batch_size, args.tgt_len)
    sentence_count = torch.zeros(args.batch_size, 1, dtype=torch.long)
    paragraph_count = torch.zeros(args.batch_size, 1, dtype=torch.long)
    batches = []
    for step, (tokens, sentence, paragraph) in enumerate(synthetic_stream(args)):
        s = sentence_count + sentence.long().cumsum(1)
        p = paragraph_count + paragraph.long().cumsum(1)
        t = (step * args.tgt_len + torch.arange(args.tgt_len)).expand(shape)
        sentence_count, paragraph_count = s[:, -1:], p[:, -1:]
        data, target = tokens.t(), tokens.roll(-1, dims=1).t()
        pst = tuple(x.t().contiguous().to(device) for x in (p, s, t))
        batches.append((data.contiguous().to(device), target.contiguous().to(device), pst))

    mems, mems_pst = (), ()

    def loss_of_batch(data, target, pst):
        # one step of their train_sega() (batch_chunk 1): the model returns the loss of every token and
        # the new memories; the memory of pst keeps the last mem_len positions as their loop does
        nonlocal mems, mems_pst
        loss, *mems = model(data, target, mems, pst, mems_pst)
        if not mems_pst:
            mems_pst = pst
        else:
            cats = [torch.cat([m, x], 0) for x, m in zip(pst, mems_pst)]
            mems_pst = tuple(cat[max(0, len(cat) - model.mem_len):] for cat in cats)
        return loss.float().mean().type_as(loss)

    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device, cast_model=True)
    return result(args.variant, args.steps * args.batch_size * args.tgt_len, seconds, model, device)

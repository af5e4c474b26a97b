"""``segatron-export``: this plugin's checkpoints in other formats.

    segatron-export hf --checkpoint checkpoint_best.pt --data CORPUS --out DIR

writes a Hugging Face directory: ``BertForMaskedLM`` for a segabert_bert_* model,
``AlbertForMaskedLM`` for one with a factorized embedding or shared layers (albert_*),
``SegaBertForMaskedLM`` for SegaBERT and ``CrossThoughtForMaskedLM`` for Cross-Thought
(remote code, ``trust_remote_code=True``); for an electra_* model, DIR/discriminator
(``ElectraForPreTraining``) and DIR/generator (``ElectraForMaskedLM``); ``XLNetLMHeadModel`` for
XLNet with ``--positions token`` (with a sentencepiece corpus: its spiece.model for ``XLNetTokenizer``);
``SegatronXLForCausalLM`` for Segatron-XL and Transformer-XL (remote code, with the memory as
``past_key_values``).
CORPUS is the segatron-preprocess directory whose sub-words the tokenizer files
reproduce.
"""
from segatron_fairseq.cli.conversion_commands import new_parser, run
from segatron_fairseq.cli.user_errors import check_output


def _hf(args) -> str:
    import os

    from segatron_fairseq.conversion.exporters import (
        huggingface_albert,
        huggingface_bert,
        huggingface_cross_thought,
        huggingface_electra,
        huggingface_segatron_xl,
        huggingface_xlnet,
    )
    from segatron_fairseq.conversion.exporters.model_card import checkpoint_facts
    from segatron_fairseq.hub.checkpoints import (
        checkpoint_model_name,
        checkpoint_task_name,
        load_checkpoint,
        read_checkpoint,
    )
    from segatron_fairseq.segments import MASK_SYMBOL
    from segatron_preprocess import subwords
    from segatron_preprocess.corpus_format import read_metadata
    from segatron_preprocess.text_encoder import TextEncoder

    if os.path.lexists(args.out):
        raise FileExistsError(f"{args.out}: --out exists; choose a new directory")
    check_output(args.out, directory=True, inputs={"--checkpoint": args.checkpoint, "--data": args.data})
    state = read_checkpoint(args.checkpoint)
    model_name = checkpoint_model_name(state)
    exporters = {"segabert": huggingface_bert, "cross_thought": huggingface_cross_thought,
                 "segabert_electra": huggingface_electra, "xlnet": huggingface_xlnet,
                 "segatron_xl": huggingface_segatron_xl}
    if model_name not in exporters:
        raise NotImplementedError(f"{args.checkpoint}: a {model_name} checkpoint, which has no Hugging Face "
                                  "export")
    facts = checkpoint_facts(args.checkpoint, state, model_name, checkpoint_task_name(state))  # read before loading
    loaded = load_checkpoint(args.checkpoint, model_name, os.path.abspath(args.data), corpus_option="--data",
                             state=state)
    if model_name == "segatron_xl":
        huggingface_segatron_xl.export(loaded.model.eval(), loaded.task.source_dictionary, args.out, args.checkpoint,
                                       TextEncoder(args.data, loaded.task.source_dictionary), loaded.task.cfg.tgt_len,
                                       facts)
        return args.out
    words = subwords.of_corpus(args.data, read_metadata(args.data))
    if model_name == "segabert" and huggingface_albert.is_albert(loaded.cfg.model):
        exporters[model_name] = huggingface_albert  # a factorized embedding or shared layers
    elif model_name == "segabert" and loaded.model.index_tables():  # its tokenizer computes the indexes
        text_encoder = TextEncoder(args.data, loaded.task.source_dictionary, keep=(MASK_SYMBOL,))
        huggingface_bert.export(loaded.model.eval(), loaded.task.source_dictionary, words, args.out, facts,
                                text_encoder)
        return args.out
    elif model_name == "cross_thought":
        huggingface_cross_thought.export(loaded.model.eval(), loaded.task.source_dictionary,
                                         TextEncoder(args.data, loaded.task.source_dictionary), args.out, facts)
        return args.out
    exporters[model_name].export(loaded.model.eval(), loaded.task.source_dictionary, words, args.out, facts)
    return args.out


def cli_main(argv=None) -> None:
    parser, formats = new_parser("segatron-export", __doc__.splitlines()[0])
    hf = formats.add_parser("hf", help="a segabert, segabert_electra (baseline), cross_thought, xlnet "
                            "(--positions token) or segatron_xl checkpoint as a Hugging Face directory")
    hf.add_argument("--checkpoint", required=True,
                    help="a checkpoint of a segabert, segabert_electra, cross_thought, xlnet or segatron_xl model")
    hf.add_argument("--data", required=True, help="its corpus (segatron-preprocess directory: dict.txt, sub-words)")
    hf.add_argument("--out", required=True, help="the directory to write (must not exist)")
    hf.set_defaults(run=_hf)
    run(parser, argv)


if __name__ == "__main__":
    cli_main()

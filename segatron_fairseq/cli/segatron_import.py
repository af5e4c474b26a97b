"""``segatron-import``: checkpoints of other code as fairseq checkpoints of this plugin.

    segatron-import authors-segatron-xl --state model_state.pt --config config.json --vocab vocab.txt --out DIR
    segatron-import hf-transformer-xl --model-dir transfo-xl-wt103 --out DIR
    segatron-import authors-segabert --model-dir segabert-base --out DIR
    segatron-import hf-bert --model-dir bert-base-uncased --out DIR
    segatron-import hf-spanbert --model-dir spanbert-base-cased --out DIR
    segatron-import hf-albert --model-dir albert-base-v2 --out DIR
    segatron-import hf-xlnet --model-dir xlnet-base-cased --out DIR
    segatron-import hf-electra --discriminator electra-small-discriminator --generator electra-small-generator --out DIR
    segatron-import authors-cross-thought --checkpoint cross-thought.pt --dict dict.txt --out DIR

write DIR/dict.txt and DIR/checkpoint.pt (a DIR that holds either is refused: nothing is replaced).
Binarize text with ``segatron-preprocess --srcdict DIR/dict.txt``
and evaluate with ``fairseq-eval-lm DATA --path DIR/checkpoint.pt --task segatron_lm``.
"""
import functools
import os

from segatron_fairseq.cli.conversion_commands import new_parser, run
from segatron_fairseq.cli.user_errors import check_output, positive_int
from segatron_preprocess.corpus_format import DICT_FILE

WRITTEN = (DICT_FILE, "checkpoint.pt")
INPUTS = ("state", "config", "vocab", "model_dir", "checkpoint", "dict", "discriminator", "generator")


def check_out(args) -> None:
    """``--out`` can be written and holds nothing an import writes (before any work)."""
    check_output(args.out, directory=True, inputs={f"--{name.replace('_', '-')}": getattr(args, name, None)
                                                   for name in INPUTS})
    for name in WRITTEN:
        if os.path.lexists(os.path.join(args.out, name)):
            raise FileExistsError(f"{args.out}: --out holds {name}; choose a new directory")


def _authors_segatron_xl(args) -> str:
    check_out(args)
    from fairseq.checkpoint_utils import load_checkpoint_file

    from segatron_fairseq.conversion.importers import transformer_xl_state
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.conversion.importers.huggingface_files import read_json
    from segatron_fairseq.conversion.importers.vocabulary import map_vocabulary, read_words

    config = read_json(args.config, ("n_token", "cutoffs", *transformer_xl_state.CONFIG_KEYS))
    state = load_checkpoint_file(args.state)
    if not isinstance(state, dict):
        state = state.state_dict()  # a whole pickled model (loads with SEGATRON_TRUST_CHECKPOINTS=1 only)
    words = read_words(args.vocab)
    if len(words) != config["n_token"]:
        raise ValueError(f"{args.vocab} has {len(words)} words; {args.config} says n_token {config['n_token']}")
    vocabulary = map_vocabulary(words, list(config["cutoffs"]), args.vocab)
    # their fork keeps the original layout, one u, v pair shared by all layers, and reversed band gates
    arguments, converted = transformer_xl_state.convert(state, config, vocabulary, args.state, reversed_gates=True)
    return write_checkpoint(args.out, vocabulary.dictionary, "segatron_lm", arguments, converted)


def _hf_transformer_xl(args) -> str:
    check_out(args)
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.conversion.importers.huggingface_transformer_xl import convert_directory

    vocabulary, arguments, converted = convert_directory(args.model_dir, args.tgt_len)
    return write_checkpoint(args.out, vocabulary.dictionary, "segatron_lm", arguments, converted)


def _bert(args, segabert: bool, spanbert: bool = False) -> str:
    check_out(args)
    from segatron_fairseq.conversion.importers import bert
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.conversion.importers.huggingface_files import find_file, read_config, read_weights
    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece, read_wordpiece_vocab

    config_path, config = read_config(args.model_dir, "bert")
    state_path, state = read_weights(args.model_dir)
    if spanbert:
        state = bert.with_bert_prefix(state)
    if bert.is_segabert(state) != segabert:
        raise ValueError(f"{state_path}: " + ("no SegaBERT index tables (token_position_embeddings): use hf-bert"
                                              if segabert else "a SegaBERT state dict: use authors-segabert"))
    vocab_path = find_file(args.model_dir, ("vocab.txt",), "WordPiece vocabulary")
    vocabulary = map_wordpiece(read_wordpiece_vocab(vocab_path), vocab_path)
    arguments, converted = bert.convert(state, config, vocabulary, state_path, config_path, fresh_mlm_head=spanbert)
    return write_checkpoint(args.out, vocabulary.dictionary, "segabert_mlm", arguments, converted)


def _hf_sentencepiece_model(args, model_type: str, importer: str, map_vocabulary: str, task: str) -> str:
    """A Hugging Face directory with a sentencepiece ``spiece.model`` (ALBERT's,
    XLNet's): ``importers/<importer>.py``'s ``map_vocabulary`` and ``convert``."""
    check_out(args)
    import importlib

    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.conversion.importers.huggingface_files import find_file, read_config, read_weights
    from segatron_fairseq.conversion.importers.sentencepiece_vocabulary import read_sentencepiece_vocab

    module = importlib.import_module(f"segatron_fairseq.conversion.importers.{importer}")
    config_path, config = read_config(args.model_dir, model_type)
    state_path, state = read_weights(args.model_dir)
    vocab_path = find_file(args.model_dir, ("spiece.model",), "sentencepiece model")
    vocabulary = getattr(module, map_vocabulary)(read_sentencepiece_vocab(vocab_path), vocab_path)
    arguments, converted = module.convert(state, config, vocabulary, state_path, config_path)
    return write_checkpoint(args.out, vocabulary.dictionary, task, arguments, converted)


def _hf_electra(args) -> str:
    check_out(args)
    from segatron_fairseq.conversion.importers import electra
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.conversion.importers.huggingface_files import find_file, read_config, read_weights
    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece, read_wordpiece_vocab

    parts = []
    for directory in (args.discriminator, args.generator):
        config_path, config = read_config(directory, "electra")
        state_path, state = read_weights(directory)
        parts.append((state, config, state_path, config_path))
    vocab_path = find_file(args.discriminator, ("vocab.txt",), "WordPiece vocabulary")
    vocabulary = map_wordpiece(read_wordpiece_vocab(vocab_path), vocab_path)
    arguments, converted = electra.convert(*parts, vocabulary)
    return write_checkpoint(args.out, vocabulary.dictionary, "segabert_mlm", arguments, converted)


def _authors_cross_thought(args) -> str:
    check_out(args)
    from fairseq.checkpoint_utils import load_checkpoint_file

    from segatron_fairseq.conversion.importers import authors_cross_thought
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint
    from segatron_fairseq.segments import MASK_SYMBOL
    from segatron_preprocess.inputs import load_dictionary

    dictionary = load_dictionary(args.dict)
    checkpoint = load_checkpoint_file(args.checkpoint)
    if not isinstance(checkpoint, dict):
        raise ValueError(f"{args.checkpoint}: not a fairseq checkpoint")
    num_words = len(dictionary) + (MASK_SYMBOL not in dictionary.indices)
    arguments, converted = authors_cross_thought.convert(checkpoint, num_words, args.checkpoint)
    return write_checkpoint(args.out, dictionary, "cross_thought_mlm", arguments, converted)


def cli_main(argv=None) -> None:
    parser, formats = new_parser("segatron-import", __doc__.splitlines()[0])
    authors = formats.add_parser("authors-segatron-xl", help="the Segatron authors' Segatron-XL / Transformer-XL "
                                 "(their Transformer-XL fork): a state dict, its constructor arguments, its vocabulary")
    authors.add_argument("--state", required=True, help="their state dict, torch.save format (a whole pickled model "
                         "loads only with SEGATRON_TRUST_CHECKPOINTS=1)")
    authors.add_argument("--config", required=True, help="JSON of the model's constructor arguments "
                         "(n_token, n_layer, n_head, d_model, d_head, d_inner, cutoffs, div_val, mem_len, ...)")
    authors.add_argument("--vocab", required=True, help="their vocabulary, one word a line in id order")
    authors.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    authors.set_defaults(run=_authors_segatron_xl)
    hf_xl = formats.add_parser("hf-transformer-xl", help="a Hugging Face TransfoXLLMHeadModel directory "
                               "(save_pretrained's, e.g. transfo-xl-wt103)")
    hf_xl.add_argument("--model-dir", required=True, help="config.json, model.safetensors or pytorch_model.bin, "
                       "vocab.pkl or vocab.txt")
    hf_xl.add_argument("--tgt-len", type=positive_int, default=128, help="segment length recorded in the checkpoint")
    hf_xl.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    hf_xl.set_defaults(run=_hf_transformer_xl)
    for name, segabert, spanbert, text in (
            ("authors-segabert", True, False, "the Segatron authors' SegaBERT (their Hugging Face fork's "
             "SegaBertForMaskedLM directory)"),
            ("hf-bert", False, False, "a Hugging Face BertForMaskedLM directory, as the BERT baseline"),
            ("hf-spanbert", False, True, "SpanBERT's released weights (a BertModel or BertForPreTraining directory, "
             "e.g. SpanBERT/spanbert-base-cased) as the BERT baseline; they have no MLM or span boundary head, so "
             "the MLM head is fresh (BERT's initialisation) unless the directory has cls.predictions")):
        subcommand = formats.add_parser(name, help=text)
        subcommand.add_argument("--model-dir", required=True,
                                help="config.json, model.safetensors or pytorch_model.bin, vocab.txt")
        subcommand.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
        subcommand.set_defaults(run=functools.partial(_bert, segabert=segabert, spanbert=spanbert))
    hf_albert = formats.add_parser("hf-albert", help="a Hugging Face AlbertForMaskedLM or AlbertForPreTraining "
                                   "directory (its sentence-order classifier as the sentence_order head), as the "
                                   "baseline without index tables")
    hf_albert.add_argument("--model-dir", required=True,
                           help="config.json, model.safetensors or pytorch_model.bin, spiece.model")
    hf_albert.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    hf_albert.set_defaults(run=functools.partial(_hf_sentencepiece_model, model_type="albert", importer="albert",
                                                 map_vocabulary="map_albert_vocabulary", task="segabert_mlm"))
    hf_xlnet = formats.add_parser("hf-xlnet", help="a Hugging Face XLNetLMHeadModel (or bare XLNetModel: output "
                                  "bias zero) directory as an xlnet model with --positions token (task xlnet_plm)")
    hf_xlnet.add_argument("--model-dir", required=True,
                          help="config.json, model.safetensors or pytorch_model.bin, spiece.model")
    hf_xlnet.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    hf_xlnet.set_defaults(run=functools.partial(_hf_sentencepiece_model, model_type="xlnet",
                                                importer="huggingface_xlnet", map_vocabulary="map_xlnet_vocabulary",
                                                task="xlnet_plm"))
    hf_electra = formats.add_parser("hf-electra", help="Hugging Face ELECTRA (an ElectraForPreTraining and an "
                                    "ElectraForMaskedLM directory) as segabert_electra's baseline (no index tables)")
    hf_electra.add_argument("--discriminator", required=True, help="the ElectraForPreTraining directory "
                            "(config.json, model.safetensors or pytorch_model.bin, vocab.txt)")
    hf_electra.add_argument("--generator", required=True, help="the ElectraForMaskedLM directory (its embeddings "
                            "are the discriminator's: a differing copy is warned about and the discriminator's kept)")
    hf_electra.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    hf_electra.set_defaults(run=_hf_electra)
    cross = formats.add_parser("authors-cross-thought", help="the Cross-Thought authors' released checkpoint "
                               "(their fairseq 0.10 RoBERTa)")
    cross.add_argument("--checkpoint", required=True, help="their checkpoint (fairseq's torch.save format)")
    cross.add_argument("--dict", required=True, help="the dict.txt it was trained with (RoBERTa's)")
    cross.add_argument("--out", required=True, help="output directory (dict.txt, checkpoint.pt)")
    cross.set_defaults(run=_authors_cross_thought)
    run(parser, argv)


if __name__ == "__main__":
    cli_main()

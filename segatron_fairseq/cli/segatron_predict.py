"""``segatron-predict``: a fine-tuned checkpoint's predictions in the official formats.

    segatron-predict squad --checkpoint ft/checkpoint_best.pt --pretrain-data CORPUS \\
        --input dev-v2.0.json --out predictions.json [--null-odds null_odds.json] [--no-answer-threshold T]
    segatron-predict glue --checkpoint ft/checkpoint_best.pt --pretrain-data CORPUS \\
        --glue-task MNLI --data glue_data/MNLI --out submission/
    segatron-predict ner --checkpoint ft/checkpoint_best.pt --pretrain-data CORPUS \\
        --input conll2003/test.txt --out test.predicted

``squad`` writes ``{id: answer}`` (and the no-answer scores, the official
script's ``--na-prob-file``); when the file has answers it also prints the
official exact match and F1. ``glue`` writes the GLUE server's files
(``MNLI-m.tsv``, ``SST-2.tsv``, ...: ``index \\t prediction``) from the task's
test files. ``ner`` writes a CoNLL file's lines with each word's predicted
label appended (conlleval's input) and, when the file has labels, prints the
entity-level F1, precision and recall (seqeval). Every output is checked
before the model is loaded: an output that is one of the inputs, or both
outputs the same file, is refused, and so is an existing file unless
``--overwrite``.
"""
import json
import os
from typing import Dict, Iterator

import torch

from segatron_fairseq.cli.conversion_commands import new_parser, run
from segatron_fairseq.cli.user_errors import check_output, finite_float, positive_int

# the fine-tuned models segatron-predict serves, and the task that pre-trains each
FINETUNED_MODELS = {"segabert": "segabert_mlm", "cloze_two_tower": "cloze_lm", "xlnet": "xlnet_plm"}
# each format: the tasks whose checkpoints it predicts with, by model
FORMAT_TASKS = {"squad": {"segabert": "extractive_qa", "xlnet": "extractive_qa"},
                "glue": {"segabert": "indexed_sentence_prediction", "cloze_two_tower": "cloze_sentence_prediction",
                         "xlnet": "indexed_sentence_prediction"},
                "ner": {"segabert": "token_labelling", "cloze_two_tower": "token_labelling",
                        "xlnet": "token_labelling"}}


def _load(args):
    """The model, task and device of ``--checkpoint``, a model of
    ``FINETUNED_MODELS`` fine-tuned with the task ``FORMAT_TASKS`` names for
    ``args.format`` and its model."""
    from segatron_fairseq.hub import checkpoints
    from segatron_fairseq.tasks.registry_aliases import registered_name

    state = checkpoints.read_checkpoint(args.checkpoint)
    trained_with = registered_name("task", checkpoints.checkpoint_task_name(state))
    model = checkpoints.served_model_name(state)
    tasks = FORMAT_TASKS[args.format]
    if model in FINETUNED_MODELS and model not in tasks:
        raise ValueError(f"{args.checkpoint}: a {model} checkpoint; segatron-predict {args.format} serves "
                         f"{' and '.join(sorted(tasks))} checkpoints")
    if model in FINETUNED_MODELS and trained_with != tasks.get(model):
        kind = "pre-trained" if trained_with == FINETUNED_MODELS[model] else "fine-tuned"
        needed = tasks.get(model) or " or ".join(sorted(set(tasks.values())))
        raise ValueError(f"{args.checkpoint}: a {kind} checkpoint (task {trained_with}); segatron-predict "
                         f"{args.format} needs one fine-tuned with the task {needed}")
    loaded = checkpoints.load_checkpoint(args.checkpoint, model if model in FINETUNED_MODELS else "segabert",
                                         os.path.abspath(args.pretrain_data), overrides={"data": args.data},
                                         corpus_option="--pretrain-data", state=state)
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    return loaded.model.eval().to(device), loaded.task, device


def _batches(dataset, batch_size: int, device: str) -> Iterator[dict]:
    from fairseq import utils

    order = list(dataset.ordered_indices())
    for start in range(0, len(order), batch_size):
        batch = dataset.collater(order[start:start + batch_size])
        yield utils.apply_to_sample(lambda t: t.to(device), batch)


def _write_together(texts: Dict[str, str]) -> None:
    """Each file of ``texts`` (path -> text), written beside its place; all are renamed in together."""
    from segatron_preprocess.atomic import atomic_paths

    paths = list(texts)
    for path in paths:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_paths(paths) as staged:
        for path, tmp in zip(paths, staged):
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(texts[path])


@torch.no_grad()
def _squad(args) -> str:
    from segatron_fairseq.data.squad_json import read_squad
    from segatron_fairseq.evaluation import squad_metrics
    from segatron_fairseq.evaluation.span_answers import QuestionAnswers, best_spans, span_logits

    inputs = {"--input": args.input, "--checkpoint": args.checkpoint}
    check_output(args.out, inputs=inputs, overwrite=args.overwrite)
    if args.null_odds:
        check_output(args.null_odds, option="--null-odds", inputs={**inputs, "--out": args.out},
                     overwrite=args.overwrite)
    args.data = os.path.dirname(os.path.abspath(args.input))
    model, task, device = _load(args)
    questions = read_squad(args.input, require_answers=False)
    dataset = task.windows_dataset(args.input, questions)
    gathered = QuestionAnswers(with_no_answer=task.cfg.squad_v2)
    head = task.cfg.classification_head_name
    for batch in _batches(dataset, args.batch_size, device):
        start_logits, end_logits = span_logits(model, batch, head, task.dictionary.pad())
        for window, golds in zip(best_spans(start_logits, end_logits, batch, args.max_answer_tokens),
                                 batch["golds"]):
            gathered.add(window, golds)
    results = gathered.results()
    outputs = {args.out: {q.qid: results[q.qid].prediction(args.no_answer_threshold) for q in questions}}
    if args.null_odds:
        outputs[args.null_odds] = {q.qid: results[q.qid].no_answer_score for q in questions}
    _write_together({path: json.dumps(value, ensure_ascii=False, indent=1) for path, value in outputs.items()})
    if any(q.answers or q.is_impossible for q in questions):
        figures = squad_metrics.evaluate(results, task.cfg.squad_v2, args.no_answer_threshold)
        line = f"exact {figures['exact']:.2f} | f1 {figures['f1']:.2f} | questions {len(results)}"
        if task.cfg.squad_v2:
            for metric in ("exact", "f1"):
                best, threshold = squad_metrics.best_threshold(results, metric)
                line += f" | best_{metric} {best:.2f} (threshold {threshold:.4f})"
        print(line)
    return args.out


@torch.no_grad()
def _glue(args) -> str:
    from segatron_fairseq.data.glue_tsv import GLUE_DIAGNOSTIC, GLUE_TEST_FILES, read_test_tsv

    if args.glue_task not in GLUE_TEST_FILES:
        raise ValueError(f"--glue-task {args.glue_task}: choose from {', '.join(GLUE_TEST_FILES)}")
    files = [(os.path.join(args.data, test.file), test) for test in GLUE_TEST_FILES[args.glue_task]]
    if args.diagnostic:
        files.append((args.diagnostic, GLUE_DIAGNOSTIC))
    inputs = {"--checkpoint": args.checkpoint, "--data": args.data, "--diagnostic": args.diagnostic}
    check_output(args.out, directory=True, inputs=inputs)
    for _, test in files:
        check_output(os.path.join(args.out, test.submission), inputs=inputs, overwrite=args.overwrite)
    rows = [(path, test, read_test_tsv(path, test.text_columns)) for path, test in files]  # all read first
    model, task, device = _load(args)
    if task.cfg.glue_task != args.glue_task:
        raise ValueError(f"{args.checkpoint}: fine-tuned on --glue-task {task.cfg.glue_task}, not {args.glue_task}")
    head = task.cfg.classification_head_name
    submissions, written = {}, []
    for path, test, lines in rows:
        dataset = task.examples_dataset([texts for _, texts in lines], [0] * len(lines))
        predictions = {}
        for batch in _batches(dataset, args.batch_size, device):
            logits, _ = model(**batch["net_input"], features_only=True, classification_head_name=head)
            for number, output in zip(batch["id"].tolist(), logits.float().cpu()):
                predictions[number] = (f"{float(output[0]):.3f}" if task.labels is None
                                       else task.labels[int(output.argmax())])
        submissions[os.path.join(args.out, test.submission)] = "index\tprediction\n" + "".join(
            f"{index}\t{predictions[number]}\n" for number, (index, _) in enumerate(lines))
        written.append(f"{path}: {len(lines):,} predictions -> {test.submission}")
    _write_together(submissions)
    print("\n".join(written))
    return args.out


@torch.no_grad()
def _ner(args) -> str:
    from segatron_fairseq.criterions.token_labelling import predicted_labels
    from segatron_fairseq.data.conll import conll_output, read_conll
    from segatron_fairseq.evaluation.entity_f1 import entity_scores, sentences_of

    check_output(args.out, inputs={"--input": args.input, "--checkpoint": args.checkpoint}, overwrite=args.overwrite)
    conll = read_conll(args.input)
    args.data = os.path.dirname(os.path.abspath(args.input))
    model, task, device = _load(args)
    dataset = task.windows_dataset(conll, with_targets=False)
    sentences = conll.sentences
    predicted = {}
    for batch in _batches(dataset, args.batch_size, device):
        for window, path in zip(batch["words"], predicted_labels(model, batch, task.cfg.classification_head_name)):
            for (sentence, word), label in zip(window, path):
                predicted[sentences[sentence].lines[word]] = task.labels[label]
    _write_together({args.out: conll_output(conll, predicted)})
    unknown = sorted({label for sentence in sentences for label in sentence.labels or ()} - set(task.labels))
    if conll.labelled and unknown:
        print(f"not scored: the last column of {args.input} is not the model's labels ({', '.join(unknown[:3])} ...)")
    elif conll.labelled:
        words = [(s, w, label, predicted[line]) for s, sentence in enumerate(sentences)
                 for w, (label, line) in enumerate(zip(sentence.labels, sentence.lines))]
        scores = entity_scores(*sentences_of(words))
        print(f"f1 {scores['f1']:.2f} | precision {scores['precision']:.2f} | recall {scores['recall']:.2f} | "
              f"sentences {len(sentences)}")
    return args.out


def _common(command) -> None:
    command.add_argument("--checkpoint", required=True, help="the fine-tuned checkpoint")
    command.add_argument("--pretrain-data", required=True,
                         help="the segatron-preprocess directory of pre-training (dict.txt, sub-words, splitter)")
    command.add_argument("--batch-size", type=positive_int, default=32)
    command.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    command.add_argument("--overwrite", action="store_true", help="replace output files that exist (else refused)")


def cli_main(argv=None) -> None:
    parser, formats = new_parser("segatron-predict", __doc__.splitlines()[0])
    squad = formats.add_parser("squad", help="SQuAD predictions {id: answer} of an extractive_qa checkpoint")
    _common(squad)
    squad.add_argument("--input", required=True, help="an official SQuAD JSON file (answers optional)")
    squad.add_argument("--out", required=True, help="the predictions JSON to write")
    squad.add_argument("--null-odds", help="also write each question's no-answer score here (v2.0)")
    squad.add_argument("--no-answer-threshold", type=finite_float, default=0.0,
                       help="v2.0: answer '' when the no-answer score exceeds it (e.g. best_f1_thresh of dev)")
    squad.add_argument("--max-answer-tokens", type=positive_int, default=30)
    squad.set_defaults(run=_squad)
    glue = formats.add_parser("glue", help="GLUE server files of an indexed_sentence_prediction or "
                                           "cloze_sentence_prediction checkpoint")
    _common(glue)
    glue.add_argument("--glue-task", required=True, help="the task's name (MNLI, SST-2, ...)")
    glue.add_argument("--data", required=True, help="the task's directory, with its test file(s)")
    glue.add_argument("--diagnostic", help="MNLI: glue_data/diagnostic/diagnostic.tsv, predicted into AX.tsv")
    glue.add_argument("--out", required=True, help="the directory of the submission files")
    glue.set_defaults(run=_glue)
    ner = formats.add_parser("ner", help="CoNLL labels of a token_labelling checkpoint")
    _common(ner)
    ner.add_argument("--input", required=True, help="a CoNLL file (token POS chunk NER, or words alone)")
    ner.add_argument("--out", required=True, help="the CoNLL file to write: the input lines, predicted label last")
    ner.set_defaults(run=_ner)
    run(parser, argv)


if __name__ == "__main__":
    cli_main()

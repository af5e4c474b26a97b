"""The docs work as written. Every command in a fenced bash block of README.md, ARCHITECTURE.md and docs/*.md is
parsed by its program's own argument parser, in-process (fairseq's commands with the plugin's --user-dir and the
command's --task, --arch and --criterion, so that their options are known; fairseq-hydra-train's overrides composed
as the command composes them); every script, repository file, link, anchor and Python name the pages mention
exists. ARCHITECTURE.md names code by paths under the packages and by bare names (`SegmentDistances`,
`levels.fit_to_table`, the task `segatron_lm`): each exists, and the page stays under 10 KB, as each model page of
docs/ does; README.md stays under 7 KB, docs/installation.md under 6 KB, docs/binarizer.md under 8 KB,
docs/conversion.md under 12 KB, all the markdown together under 130 KB.
Every CHANGELOG entry is one short line. A failure names the page, the line and the problem.

A command in a page, and what is checked::

    fairseq-eval-lm data-bin --user-dir segatron_fairseq --task segatron_lm --tgt-len 150   # fairseq's parser
    segatron-import hf-bert --model-dir bert --out ckpt                # the parser segatron-import builds
    bash scripts/test.sh --quick                                       # the script exists and reads --quick
    python scripts/prepare_nli.py snli_1.0 glue/MNLI nli               # the parser the script builds
"""
import argparse
import ast
import collections
import contextlib
import fnmatch
import functools
import importlib
import io
import itertools
import os
import re
import runpy
import shlex
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
CHANGELOG = ROOT / "docs" / "CHANGELOG.md"
PAGES = [ROOT / "README.md", ARCHITECTURE, *sorted((ROOT / "docs").glob("*.md"))]
ARCHITECTURE_MAX_BYTES = 10 * 1024
# the front page: what the project is, the install command, the demo, the systems with their pages, links
README_MAX_BYTES = 7 * 1024
# the install commands, options, what it installs, the Python versions checked, troubleshooting
INSTALLATION_MAX_BYTES = 6 * 1024
MARKDOWN_MAX_BYTES = 130 * 1024  # README.md, ARCHITECTURE.md and docs/*.md together, CHANGELOG included
# the model and benchmark pages: what it is, the commands, the options, the measured results, each with its command
MODEL_PAGE_MAX_BYTES = 10 * 1024
MODEL_PAGES = ("benchmarks.md", "cloze-two-tower.md", "cross-thought.md", "encoder-objectives.md", "segabert.md",
               "segatron-xl.md", "token-labelling.md", "xlnet-huggingface.md", "xlnet.md")
# the tools' pages: what it does, the commands, the options, what it promises and checks, with the tests' command
TOOL_PAGE_MAX_BYTES = {"binarizer.md": 8 * 1024, "conversion.md": 12 * 1024}
CHANGELOG_MAX_LINE = 140  # characters of one entry, "- " included
# ARCHITECTURE.md's short paths are relative to one of these
CODE_ROOTS = (ROOT, ROOT / "segatron_fairseq", ROOT / "preprocess")
# the code whose names ARCHITECTURE.md may spell (the tests too: `test_layers.LAYERS`)
PACKAGE_DIRS = {"segatron_fairseq": ROOT / "segatron_fairseq", "segatron_preprocess": ROOT / "preprocess",
                "tests": ROOT / "tests"}
# a code span that names a file, not a Python name (`pytest.ini`, `corpus_format.py`)
FILE_EXTENSIONS = ("py", "ini", "yaml", "json", "txt", "md", "toml", "cfg", "sh")
# a path that starts with one of these is a file of the repository
REPO_DIRS = ("segatron_fairseq", "preprocess", "scripts", "tests", "docs")
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
SHELL_BUILTINS = ("source", "echo", "printf", "cd", "export", "mkdir")
SHELL_OPERATORS = ("|", "||", "&&", ";", "&")
SHELL_REDIRECTIONS = (">", ">>", "<")
FILE_SUFFIXES = (".json", ".py", ".yaml", ".txt", ".md")
PLACEHOLDER = "..."  # "fairseq-train data-bin --user-dir segatron_fairseq ...": options left out on purpose
# fairseq's commands -> the function of fairseq.options that builds their parser
FAIRSEQ_PARSERS = {
    "fairseq-train": "get_training_parser",
    "fairseq-validate": "get_validation_parser",
    "fairseq-eval-lm": "get_eval_lm_parser",
    "fairseq-generate": "get_generation_parser",
    "fairseq-interactive": "get_interactive_generation_parser",
}


@dataclass(frozen=True)
class Command:
    """One simple command of a page: ``argv`` as the shell passes it (``$PWD`` left as written)."""
    page: str
    line: int
    argv: Tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {shlex.join(self.argv)}"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, the page line of its first text line, its lines."""
    page: str
    language: str
    line: int
    lines: Tuple[str, ...]


def relative(page: Path) -> str:
    return str(page.relative_to(ROOT))


def fenced_blocks(page: Path) -> List[Block]:
    """The page's fenced code blocks (```lang ... ```, indented or not)."""
    blocks, open_fence, language, start, lines = [], None, "", 0, []
    for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"\s*(```+)\s*(\S*)", text)
        if open_fence is None and fence:
            open_fence, language, start, lines = fence.group(1), fence.group(2).lower(), number + 1, []
        elif open_fence is not None and fence and fence.group(1) == open_fence and not fence.group(2):
            blocks.append(Block(relative(page), language, start, tuple(lines)))
            open_fence = None
        elif open_fence is not None:
            lines.append(text)
    assert open_fence is None, f"{relative(page)}: a code block opened at line {start - 1} is never closed"
    return blocks


def prose(page: Path) -> str:
    """The page without its fenced code blocks (line numbers kept: block lines become empty)."""
    inside = set()
    for block in fenced_blocks(page):
        inside.update(range(block.line - 1, block.line + len(block.lines) + 1))
    return "\n".join("" if number in inside else text
                     for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), 1))


def split_commands(text: str, page: str, line: int) -> List[Command]:
    """The simple commands of one shell line: split at | && ; and the like, redirections and leading
    ``NAME=value`` assignments dropped, comments and ``...`` placeholders left out.

        echo "a b" | fairseq-interactive data -> (echo, "a b"), (fairseq-interactive, data)
    """
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, argv, tokens = [], [], iter(list(lexer))
    for token in tokens:
        if token in SHELL_OPERATORS:
            commands.append(argv)
            argv = []
        elif token in SHELL_REDIRECTIONS:
            next(tokens, None)
        elif token != PLACEHOLDER and not (not argv and re.fullmatch(r"[A-Za-z_]\w*=.*", token)):
            argv.append(token)
    commands.append(argv)
    return [Command(page, line, tuple(a)) for a in commands if a]


def block_commands(block: Block) -> List[Command]:
    """The commands of a shell block, with ``\\`` continuations joined."""
    commands, pending, start = [], "", block.line
    for offset, text in enumerate(block.lines):
        if not pending:
            start = block.line + offset
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        commands += split_commands(pending + text, block.page, start)
        pending = ""
    assert not pending, f"{block.page}:{start}: a command ends in a line continuation"
    return commands


def inline_commands(page: Path) -> List[Command]:
    """Commands written in the text as code (`bash scripts/demo.sh --data DIR`), of the programs this test
    knows. Their option values may be placeholders, so only their option names are checked."""
    commands = []
    for number, text in enumerate(prose(page).splitlines(), 1):
        for span in re.findall(r"`([^`]+)`", text):
            for command in split_commands(span.replace("[", " ").replace("]", " "), relative(page), number):
                if command.argv[0] in ("bash", "python") and len(command.argv) > 1 \
                        or command.argv[0] in console_scripts():
                    commands.append(command)
    return commands


def shell_blocks() -> List[Block]:
    return [block for page in PAGES for block in fenced_blocks(page) if block.language in SHELL_LANGUAGES]


@functools.cache
def all_commands() -> Tuple[Command, ...]:
    return tuple(command for block in shell_blocks() for command in block_commands(block))


@functools.cache
def console_scripts() -> Dict[str, str]:
    """setup.py's console scripts: name -> ``module:function``."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    call = next(node for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    entry_points = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "entry_points"))
    return dict(re.fullmatch(r"\s*([\w-]+)\s*=\s*(\S+)\s*", line).groups()
                for line in entry_points["console_scripts"])


def commands_of(*programs: str) -> List[Command]:
    return [command for command in all_commands() if command.argv[0] in programs]


def with_pwd(argument: str) -> str:
    """``$PWD`` as the shell would expand it when the command runs in the repository."""
    return argument.replace("${PWD}", str(ROOT)).replace("$PWD", str(ROOT))


class _ParserBuilt(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def built_parser(main: Callable[[], object]) -> argparse.ArgumentParser:
    """The parser that ``main`` builds, taken from it when it asks the parser to parse: ``main`` stops there,
    having done nothing else."""
    def stop(parser, *args, **kwargs):
        raise _ParserBuilt(parser)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", stop):
        try:
            main()
        except _ParserBuilt as built:
            return built.parser
    raise AssertionError(f"{main} returned without parsing its arguments")


def console_script_parser(name: str) -> argparse.ArgumentParser:
    module, function = console_scripts()[name].split(":")
    main = getattr(importlib.import_module(module), function)
    return built_parser(lambda: main([]))


def python_script_parser(script: Path) -> argparse.ArgumentParser:
    """The parser of ``python SCRIPT``, run as ``__main__`` with its own directory on the path."""
    def main():
        with mock.patch.object(sys, "argv", [str(script)]), \
                mock.patch.object(sys, "path", [str(script.parent), *sys.path]):
            runpy.run_path(str(script), run_name="__main__")

    return built_parser(main)


def parse(parse_args: Callable[[], object], command: Command) -> None:
    """Fail with the parser's message (and the page line) when it refuses the command."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            parse_args()
        except SystemExit as exit:
            if exit.code not in (0, None):
                pytest.fail(f"{command}\n  refused: {stderr.getvalue().strip().splitlines()[-1]}")


def option_names(parser: argparse.ArgumentParser, argv: Tuple[str, ...]) -> set:
    """The option strings ``parser`` accepts for ``argv``: its own and those of the subcommand argv names
    (argparse keeps both in its private tables; it has no public way to list them)."""
    names = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice, subparser in action.choices.items():
                if choice in argv:
                    names |= option_names(subparser, argv)
    return names


def repo_path(argument: str) -> Optional[str]:
    """``argument`` as a repository path when it names one (``scripts/x.sh``, ``$PWD/segatron_fairseq``)."""
    argument = re.sub(r"^\$\{?PWD\}?/", "", argument.split("=", 1)[1] if "=" in argument else argument)
    if argument in REPO_DIRS or argument.startswith(tuple(d + "/" for d in REPO_DIRS)):
        return argument
    return None


def brace_expansions(text: str) -> List[str]:
    """``a/{b,c}_{d,e}.yaml`` -> the four paths, as the shell expands it."""
    parts = re.split(r"\{([^{}]*,[^{}]*)\}", text)
    choices = [[part] if i % 2 == 0 else part.split(",") for i, part in enumerate(parts)]
    return ["".join(combination) for combination in itertools.product(*choices)]


def heading_anchors(page: Path) -> set:
    """The anchors GitHub gives the page's headings (lower case, punctuation dropped, spaces as hyphens;
    a repeated heading gets -1, -2, ...)."""
    anchors, seen = set(), {}
    for text in prose(page).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", text)
        if heading:
            anchor = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            anchors.add(anchor if anchor not in seen else f"{anchor}-{seen[anchor]}")
            seen[anchor] = seen.get(anchor, 0) + 1
    return anchors


def python_names(page: Path) -> Iterator[Tuple[int, str]]:
    """(line, dotted name) of every name of the two packages a page spells: in its text
    (`segatron_preprocess.text_encoder.GenerationIndexer`) and in the imports of its Python blocks."""
    for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for name in re.findall(r"\b(?:segatron_fairseq|segatron_preprocess)(?:\.[A-Za-z_]\w*)+", text):
            if not name.endswith(FILE_SUFFIXES):  # segatron_preprocess.json is a file
                yield number, name
    for block in fenced_blocks(page):
        if block.language == "python":
            for node in ast.walk(ast.parse("\n".join(block.lines))):
                if isinstance(node, ast.ImportFrom):
                    yield block.line + node.lineno - 1, node.module
                    for alias in node.names:
                        yield block.line + node.lineno - 1, f"{node.module}.{alias.name}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        yield block.line + node.lineno - 1, alias.name


def resolve(name: str) -> object:
    """The object a dotted name names: the longest module prefix imported, the rest read as attributes."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(parts[0])


# the extraction itself


def test_pages_have_commands_of_every_kind():
    """The extraction finds the pages' commands: a regression in it would make every check below vacuous."""
    programs = {command.argv[0] for command in all_commands()}
    assert {"fairseq-train", "fairseq-eval-lm", "fairseq-hydra-train", "segatron-preprocess", "segatron-import",
            "bash", "python"} <= programs, programs
    assert {relative(page) for page in PAGES} >= {"README.md", "ARCHITECTURE.md", "docs/segatron-xl.md",
                                                  "docs/segabert.md", "docs/cross-thought.md", "docs/binarizer.md",
                                                  "docs/conversion.md", "docs/benchmarks.md", "docs/CHANGELOG.md"}


def test_shell_lines_split_into_commands():
    line = ("echo 'a b' | fairseq-interactive data --user-dir segatron_fairseq ... --seed 1 > out.txt; "
            "SPEC='torch==2.5.1' bash scripts/install.sh   # a comment")
    assert [c.argv for c in split_commands(line, "page.md", 3)] == [
        ("echo", "a b"), ("fairseq-interactive", "data", "--user-dir", "segatron_fairseq", "--seed", "1"),
        ("bash", "scripts/install.sh")]
    block = Block("page.md", "bash", 10, ("segatron-plot curves a.log \\", "    --out curves   # per head", "x"))
    assert [(c.line, c.argv) for c in block_commands(block)] == [
        (10, ("segatron-plot", "curves", "a.log", "--out", "curves")), (12, ("x",))]
    assert brace_expansions("c/{a,b}_{x,y}.yaml") == ["c/a_x.yaml", "c/a_y.yaml", "c/b_x.yaml", "c/b_y.yaml"]
    assert repo_path("common.user_dir=$PWD/segatron_fairseq") == "segatron_fairseq"
    assert repo_path("data-bin/wikipedia") is None


# (a) every option is accepted by its program's parser


@contextlib.contextmanager
def in_repository(program: str):
    """The working directory and ``sys.argv`` of ``program`` run in the repository (fairseq reads
    ``--user-dir segatron_fairseq`` relative to it, and peeks at ``sys.argv`` for it)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with mock.patch.object(sys, "argv", [program]):
            yield
    finally:
        os.chdir(cwd)


def check_console_script(command: Command) -> None:
    parser = console_script_parser(command.argv[0])
    parse(lambda: parser.parse_args(command.argv[1:]), command)


def check_fairseq_command(command: Command) -> None:
    """As fairseq's command line parses it: the plugin imported from --user-dir, then the options of the
    command's task, architecture, criterion, optimizer and scheduler added."""
    from fairseq import options

    with in_repository(command.argv[0]):
        parser = getattr(options, FAIRSEQ_PARSERS[command.argv[0]])()
        parse(lambda: options.parse_args_and_arch(parser, input_args=list(command.argv[1:])), command)


def check_fairseq_preprocess(command: Command) -> None:
    from fairseq import options

    parser = options.get_preprocessing_parser()
    parse(lambda: parser.parse_args(command.argv[1:]), command)


def check_hydra_train(command: Command) -> None:
    """The yaml named by --config-dir / --config-name composed with the command's overrides as
    fairseq-hydra-train composes it (hydra_init under the config's name, then hydra), and the task's, model's
    and other components' fields filled from their dataclasses (an unknown field is refused there)."""
    from fairseq.dataclass.initialize import add_defaults, hydra_init
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    import segatron_fairseq  # noqa: F401  (what common.user_dir imports: the plugin's tasks and models)

    hydra = argparse.ArgumentParser(add_help=False)
    hydra.add_argument("--config-dir", required=True)
    hydra.add_argument("--config-name", required=True)
    known, overrides = hydra.parse_known_args([with_pwd(a) for a in command.argv[1:]])
    config_dir = Path(known.config_dir) if Path(known.config_dir).is_absolute() else ROOT / known.config_dir
    if not (config_dir / f"{known.config_name}.yaml").is_file():
        pytest.fail(f"{command}\n  {config_dir / known.config_name}.yaml: no such config")
    store = ConfigStore.instance()
    kept = dict(store.repo)  # hydra_init adds to the process's ConfigStore: taken back below
    try:
        hydra_init(known.config_name)
        with warnings.catch_warnings():  # the command warns the same: fairseq's schema has the config's name
            warnings.filterwarnings("ignore", message=r"\s*'\w+' is validated against ConfigStore schema")
            with initialize_config_dir(config_dir=str(config_dir), version_base=None):
                cfg = compose(config_name=known.config_name, overrides=overrides)
        add_defaults(cfg)
        OmegaConf.to_container(cfg, resolve=True)
    except Exception as error:  # hydra's and omegaconf's errors name the override or the field
        pytest.fail(f"{command}\n  refused: {type(error).__name__}: {error}")
    finally:
        store.repo.clear()
        store.repo.update(kept)


def check_python_script(command: Command) -> None:
    if command.argv[1:3] == ("-m", "pytest"):
        return  # .venv/bin/python -m pytest tests/...: the test files are checked as paths
    script = ROOT / command.argv[1]
    if not script.is_file():
        pytest.fail(f"{command}\n  {command.argv[1]}: no such script")
    parser = python_script_parser(script)
    parse(lambda: parser.parse_args(command.argv[2:]), command)


def reads_option(script: Path, option: str) -> bool:
    """Whether a shell script handles ``option`` (a case pattern, a test, or passes it on)."""
    return re.search(rf"(^|[\s|\"'(]){re.escape(option)}([\s|)\"'=]|$)", script.read_text(encoding="utf-8"),
                     re.M) is not None


def check_bash_script(command: Command) -> None:
    script = ROOT / command.argv[1]
    if not script.is_file():
        pytest.fail(f"{command}\n  {command.argv[1]}: no such script")
    unknown = [a for a in command.argv[2:] if a.startswith("--") and not reads_option(script, a)]
    if unknown:
        pytest.fail(f"{command}\n  {command.argv[1]} does not read {unknown}")


def check_command(command: Command) -> None:
    """Fail unless ``command``'s program accepts it as written."""
    program = command.argv[0]
    if program in SHELL_BUILTINS:
        return
    if program == "bash":
        check_bash_script(command)
    elif program == "python" or program.endswith("/python"):
        check_python_script(command)
    elif program in FAIRSEQ_PARSERS:
        check_fairseq_command(command)
    elif program == "fairseq-preprocess":
        check_fairseq_preprocess(command)
    elif program == "fairseq-hydra-train":
        check_hydra_train(command)
    elif program in console_scripts():
        check_console_script(command)
    else:
        pytest.fail(f"{command}\n  {program}: no check for this program here (add one)")


@pytest.mark.parametrize("command", all_commands(), ids=str)
def test_commands_parse(command):
    check_command(command)


@pytest.mark.parametrize("line", [
    "fairseq-eval-lm data --user-dir segatron_fairseq --task segatron_lm --path c.pt --tgt-lenn 150",
    "fairseq-train data --user-dir segatron_fairseq --task segatron_lm --arch segatron_xl_tiny --no-such-part",
    "fairseq-hydra-train --config-dir segatron_fairseq/config --config-name segatron_xl_tiny task.no_such_field=1",
    "fairseq-hydra-train --config-dir segatron_fairseq/config --config-name segatron_xl_tiny model.no_such_field=1",
    "fairseq-hydra-train --config-dir segatron_fairseq/config --config-name no_such_config task.data=d",
    "segatron-import hf-bert --modeldir bert --out ckpt",
    "segatron-preprocess --trainpref t.txt --destdir d --no-such-option",
    "python scripts/benchmarks/bench_segatron_xl.py --layers 16 --no-such-option",
    "bash scripts/demo.sh --no-such-option",
    "no-such-program --data d",
])
def test_checks_refuse_what_the_programs_refuse(line):
    """The checks above are not vacuous: each refuses a command its program would refuse."""
    (command,) = split_commands(line, "test", 1)
    with pytest.raises(pytest.fail.Exception):
        check_command(command)


def test_every_console_script_takes_help():
    """README: "Each takes --help": every console script of setup.py builds a parser with --help, whose text (and
    each subcommand's) formats (argparse reads a bare % in a help string as a format and raises)."""
    for name in console_scripts():
        parser = console_script_parser(name)
        assert "--help" in parser._option_string_actions, name
        parsers = [parser] + [subparser for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                              for subparser in action.choices.values()]
        for each in parsers:
            assert each.format_help().startswith("usage:"), each.prog


def test_short_commands_run_as_written(capsys):
    """The commands that need no data run, in-process: `segatron-components` lists what the plugin registers."""
    for command in commands_of("segatron-components"):
        module, function = console_scripts()["segatron-components"].split(":")
        getattr(importlib.import_module(module), function)(list(command.argv[1:]))
        assert "segatron_lm" in capsys.readouterr().out, command


def option_reader(command: Command) -> Callable[[str], bool]:
    """Whether ``command``'s program reads an option name (``--data``, ``--data=DIR``)."""
    program = command.argv[0]
    if program == "bash":
        return functools.partial(reads_option, ROOT / command.argv[1])
    parser = python_script_parser(ROOT / command.argv[1]) if program == "python" else console_script_parser(program)
    names = option_names(parser, command.argv)
    return lambda option: option.split("=")[0] in names


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_inline_commands_use_known_options(page):
    """Commands in the text (`bash scripts/demo.sh --data DIR`): their scripts exist and every option name is
    one their program reads."""
    failures = []
    for command in inline_commands(page):
        if command.argv[0] in ("bash", "python") and not (ROOT / command.argv[1]).is_file():
            failures.append(f"{command}\n  {command.argv[1]}: no such script")
            continue
        reads = option_reader(command)
        unknown = [a for a in command.argv[1:] if a.startswith("--") and not reads(a)]
        if unknown:
            failures.append(f"{command}\n  {' '.join(command.argv[:2])} does not read {unknown}")
    assert not failures, "\n".join(failures)


# (b), (c) scripts, files, links and Python names


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_repository_paths_exist(page):
    """Every repository path the page names, as code in its text or as an argument of its commands."""
    named = [(number, span) for number, text in enumerate(prose(page).splitlines(), 1)
             for span in re.findall(r"`([^`\s]+)`", text)]
    named += [(c.line, a) for block in fenced_blocks(page) if block.language in SHELL_LANGUAGES
              for c in block_commands(block) for a in c.argv]
    missing = []
    for number, text in named:
        path = repo_path(text)
        if path is not None:
            for expanded in brace_expansions(path):
                if not list(ROOT.glob(expanded)):
                    missing.append(f"{relative(page)}:{number}: {expanded}")
    assert not missing, "no such file:\n  " + "\n  ".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_links_and_anchors_resolve(page):
    broken = []
    for number, text in enumerate(prose(page).splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https://, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{relative(page)}:{number}: {target}: no such file")
            elif anchor and anchor not in heading_anchors(linked):
                broken.append(f"{relative(page)}:{number}: {target}: no heading #{anchor} in {path or 'the page'}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_python_names_resolve(page):
    """Every name of segatron_fairseq / segatron_preprocess the page spells imports; every Python block
    parses."""
    unresolved = []
    for number, name in python_names(page):
        try:
            resolve(name)
        except (ImportError, AttributeError) as error:
            unresolved.append(f"{relative(page)}:{number}: {name}: {type(error).__name__}: {error}")
    assert not unresolved, "\n".join(unresolved)


def test_readme_is_a_front_page():
    """README.md stays a front page (at most README_MAX_BYTES) that links every page of docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    size = len(readme.encode("utf-8"))
    assert size <= README_MAX_BYTES, f"README.md: {size} bytes, more than {README_MAX_BYTES}"
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in readme, f"README.md: no link to docs/{page.name}"


def test_installation_page_stays_short():
    size = len((ROOT / "docs" / "installation.md").read_bytes())
    assert size <= INSTALLATION_MAX_BYTES, f"docs/installation.md: {size} bytes, more than {INSTALLATION_MAX_BYTES}"


# ARCHITECTURE.md: short paths and bare names of code, its size


def _defined(body: List[ast.stmt], imports: bool = True) -> set:
    """The names a module or class body binds: classes, functions, assignments (under if / try / with too) and,
    with ``imports``, imported names."""
    names = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and imports:
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            nested = node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            nested += [statement for handler in getattr(node, "handlers", []) for statement in handler.body]
            names |= _defined(nested, imports)
    return names


@functools.cache
def code_names() -> Tuple[frozenset, Dict[str, frozenset]]:
    """(names, members) of the packages and the tests, read with ``ast``. names: every module by each dotted tail
    of its name (`segatron_fairseq.segments.layout`, `segments.layout`, `layout`), every class, every module-level
    function and constant. members: of a module, what it binds (a package: its modules too); of a class, what
    its body binds, what its methods assign to ``self`` and the members of its base classes of this code."""
    names, members, bases = set(), collections.defaultdict(set), collections.defaultdict(set)
    for package, directory in PACKAGE_DIRS.items():
        for path in sorted(directory.rglob("*.py")):
            parts = (package, *path.relative_to(directory).with_suffix("").parts)
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for start in range(len(parts)):
                names.add(".".join(parts[start:]))
                members[".".join(parts[start:])] |= _defined(tree.body)
                if start < len(parts) - 1:
                    members[".".join(parts[start:-1])].add(parts[-1])
            names |= _defined(tree.body, imports=False)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    names.add(node.name)
                    bases[node.name] |= {getattr(base, "id", getattr(base, "attr", None)) for base in node.bases}
                    members[node.name] |= _defined(node.body) | {
                        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                        and isinstance(n.value, ast.Name) and n.value.id == "self"}
    def inherited(name: str, seen: frozenset) -> set:
        return members.get(name, set()).union(*(inherited(base, seen | {name}) for base in bases[name]
                                                if base in members and base not in seen))

    return frozenset(names), {name: frozenset(inherited(name, frozenset())) for name in list(members)}


@functools.cache
def registered_names() -> frozenset:
    """What fairseq's registries hold with the plugin imported (tasks, models, architectures, criterions,
    optimizers, schedulers: the plugin's and fairseq's own), and the names of the plugin's yaml configs."""
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
    from fairseq.optim import OPTIMIZER_REGISTRY
    from fairseq.optim.lr_scheduler import LR_SCHEDULER_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    import segatron_fairseq  # noqa: F401  (registers the plugin's components)

    registries = (TASK_REGISTRY, MODEL_REGISTRY, ARCH_MODEL_REGISTRY, CRITERION_REGISTRY, OPTIMIZER_REGISTRY,
                  LR_SCHEDULER_REGISTRY)
    configs = {path.stem for path in (ROOT / "segatron_fairseq" / "config").glob("*.yaml")}
    return frozenset(name for registry in registries for name in registry) | configs


def names_code(span: str) -> bool:
    """Whether a code span names existing code: a Python name of the packages (`SegmentDistances`,
    `SegmentDistances(bidirectional=True)`, `levels.fit_to_table`, `SegaBERTModel.token_features`: each dotted
    part a member of the one before), or a registered name (`segatron_lm`, `segabert_albert_*`)."""
    name = re.sub(r"\(.*\)$", "", span)
    names, members = code_names()
    if "." not in name:
        return (name in names or any(name in values for values in members.values())
                or any(fnmatch.fnmatchcase(registered, name) for registered in registered_names()))
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        owner = ".".join(parts[:split])
        if owner in names:
            for part in parts[split:]:
                if part not in members.get(owner, ()):
                    return False
                owner = part
            return True
    return False


def code_spans(page: Path) -> Iterator[Tuple[int, str]]:
    """(line, span) of every code span in the page's text."""
    for number, text in enumerate(prose(page).splitlines(), 1):
        for span in re.findall(r"`([^`]+)`", text):
            yield number, span


def code_span_problem(span: str) -> Optional[str]:
    """Why a code span of ARCHITECTURE.md names nothing (None when it names something, or is not code: a word,
    an option, a symbol). A path is looked for under the repository, `segatron_fairseq/` and `preprocess/`; a
    file name alone anywhere in the packages, tests and scripts; a name as ``names_code`` says."""
    if span.startswith("-") or span.split()[0] in ("bash", "python"):
        return None  # an option, a command: the command checks read them
    if re.match(r"(segatron|cross-thought)-", span):
        return None if span.split()[0] in console_scripts() else "no such console script"
    if "/" in span:
        found = any(list(root.glob(path.rstrip("/"))) for root in CODE_ROOTS for path in brace_expansions(span))
        return None if found else "no such path"
    if span.rsplit(".", 1)[-1] in FILE_EXTENSIONS and "." in span:
        homes = [ROOT / d for d in REPO_DIRS if d != "docs"]
        found = (ROOT / span).exists() or any(next(home.rglob(span), None) for home in homes)
        return None if found else "no such file"
    name = re.sub(r"\(.*\)$", "", span.lstrip("@"))
    if not re.fullmatch(r"[A-Za-z_][\w*]*(\.[A-Za-z_]\w*)*", name) or not re.search(r"[_.A-Z]", name):
        return None  # a word, a symbol, an expression
    return None if names_code(name) else "no such name"


def test_architecture_names_existing_code():
    """Every path, file and name of code that ARCHITECTURE.md spells exists (it drifted before this test)."""
    problems = [f"ARCHITECTURE.md:{number}: `{span}`: {problem}" for number, span in code_spans(ARCHITECTURE)
                for problem in [code_span_problem(span)] if problem]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("span, named", [
    ("SegmentDistances", True), ("SegmentDistances(bidirectional=True)", True), ("levels.fit_to_table", True),
    ("segments.TABLE_SIZES", True), ("SegmentMemory.counters", True), ("XLNetModel.token_features", True),
    ("SegmentDistances._run_grid", True), ("segatron_lm", True), ("masked_lm", True), ("segabert_albert_*", True),
    ("modules/segment_distances.py", True), ("preprocess/indexer.py", True), ("tests/project/", True),
    ("pytest.ini", True), ("corpus_format.py", True), ("--no-such-option", True), ("[CLS]", True), ("token", True),
    ("segatron-preprocess", True), ("segatron-no-such-tool", False),
    ("NoSuchClass", False), ("SegmentDistances.no_such_method", False), ("levels.no_such_name", False),
    ("no_such_task", False), ("no_such_arch_*", False), ("modules/no_such.py", False), ("no_such.py", False),
    ("SegatronXLDecoder.extract_counters", False), ("SegatronXLDecoder.decode_step", True),
])
def test_code_span_checks_refuse_what_does_not_exist(span, named):
    assert (code_span_problem(span) is None) == named, span


def test_architecture_stays_short():
    size = len(ARCHITECTURE.read_bytes())
    assert size <= ARCHITECTURE_MAX_BYTES, f"ARCHITECTURE.md: {size} bytes, more than {ARCHITECTURE_MAX_BYTES}"


# the size of the markdown


def test_markdown_stays_short():
    sizes = sorted(((len(page.read_bytes()), relative(page)) for page in PAGES), reverse=True)
    total = sum(size for size, _ in sizes)
    largest = ", ".join(f"{name} {size}" for size, name in sizes[:5])
    assert total <= MARKDOWN_MAX_BYTES, f"the markdown: {total} bytes, over {MARKDOWN_MAX_BYTES}; largest: {largest}"


@pytest.mark.parametrize("name", MODEL_PAGES)
def test_model_pages_stay_short(name):
    size = len((ROOT / "docs" / name).read_bytes())
    assert size <= MODEL_PAGE_MAX_BYTES, f"docs/{name}: {size} bytes, more than {MODEL_PAGE_MAX_BYTES}"


@pytest.mark.parametrize("name, limit", TOOL_PAGE_MAX_BYTES.items())
def test_tool_pages_stay_short(name, limit):
    size = len((ROOT / "docs" / name).read_bytes())
    assert size <= limit, f"docs/{name}: {size} bytes, more than {limit}"


# docs/CHANGELOG.md: one short line per change


def changelog_problems(lines: List[str]) -> List[str]:
    """Lines that are neither a heading, the back link, blank, nor a one-line entry ("- ...") of at most
    CHANGELOG_MAX_LINE characters."""
    problems = []
    for number, text in enumerate(lines, 1):
        if not text.strip() or text.startswith("#") or text.startswith("[Back to the README]"):
            continue
        if not text.startswith("- "):
            problems.append(f"docs/CHANGELOG.md:{number}: not a one-line entry (a paragraph or a continuation)")
        elif len(text) > CHANGELOG_MAX_LINE:
            problems.append(f"docs/CHANGELOG.md:{number}: {len(text)} characters, more than {CHANGELOG_MAX_LINE}")
    return problems


def test_changelog_entries_are_short_lines():
    lines = CHANGELOG.read_text(encoding="utf-8").splitlines()
    assert sum(text.startswith("- ") for text in lines) >= 30, "docs/CHANGELOG.md: its entries are not found"
    versions = [text for text in lines if text.startswith("## ")]
    assert versions[-1] == "## 0.1.0" and all(re.fullmatch(r"## (Unreleased|\d+\.\d+\.\d+( \(unreleased\))?)", v)
                                              for v in versions), versions
    problems = changelog_problems(lines)
    assert not problems, "\n".join(problems)


def test_changelog_check_refuses_paragraphs_and_long_lines():
    assert changelog_problems(["# Changelog", "", "- a change", "## 0.1.0"]) == []
    assert len(changelog_problems(["- a change that goes on", "  on the next line"])) == 1
    assert len(changelog_problems(["A paragraph."])) == 1
    assert len(changelog_problems(["- " + "x" * CHANGELOG_MAX_LINE])) == 1


def test_code_points_to_nothing_outside_the_repository():
    """Docstrings and comments say what a fact is instead of citing notes or papers outside the repository
    (`../shared/notes/...`), which a reader of the repository does not have."""
    pointers = re.compile(r"shared/(notes|papers)\b")
    cited = [f"{path.relative_to(ROOT)}:{number}: {text.strip()}" for directory in PACKAGE_DIRS.values()
             if directory.name != "tests" for path in sorted(directory.rglob("*.py"))
             for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pointers.search(text)]
    assert not cited, "\n".join(cited)

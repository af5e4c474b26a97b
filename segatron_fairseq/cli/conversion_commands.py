"""What ``segatron-import`` and ``segatron-export`` share: one subcommand per
format, each writing files; a bad input ends the program with one line that
names the file and the problem."""
import argparse
from typing import List, Optional, Tuple

from segatron_fairseq.cli.user_errors import exit_on_user_error
from segatron_preprocess.errors import PreprocessError


def new_parser(prog: str, description: str) -> Tuple[argparse.ArgumentParser, "argparse._SubParsersAction"]:
    """The parser and its subcommands (``formats.add_parser``; each sets ``run``)."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    return parser, parser.add_subparsers(dest="format", required=True)


def run(parser: argparse.ArgumentParser, argv: Optional[List[str]]) -> None:
    """Parse ``argv``, run the chosen subcommand and print what it wrote."""
    args = parser.parse_args(argv)
    with exit_on_user_error(parser.prog, (KeyError, NotImplementedError, PreprocessError)):
        path = args.run(args)
    print(f"wrote {path}")

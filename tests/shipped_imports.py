"""The import check of an export's Python files: transformers copies remote code's relative imports into its
module cache, so each file may import only the standard library, the packages ``allowed`` (``transformers`` too
for the remote code's own files) and other files of the directory, by the pattern `from .name import` that
transformers finds."""
import ast
import sys
from pathlib import Path
from typing import Callable, Set


def assert_imports_only(directory: Path, allowed: Set[str], is_remote_code: Callable[[str], bool]) -> None:
    shipped = {path.stem for path in directory.glob("*.py")}
    for path in directory.glob("*.py"):
        packages = allowed | ({"transformers"} if is_remote_code(path.stem) else set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module, f"{path.name}: `from . import` hides its modules from transformers"
                assert node.module in shipped, f"{path.name} imports .{node.module}, which is not shipped"
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                top = name.split(".")[0]
                assert top in packages or top in sys.stdlib_module_names, f"{path.name} imports {name}"

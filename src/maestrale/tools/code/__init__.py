"""The `code_interpreter` built-in tool: the model's Python run in a bubblewrap sandbox."""

from maestrale.tools.code.tool import CodeInterpreter

__all__ = ["CodeInterpreter"]

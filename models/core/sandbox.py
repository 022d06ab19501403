"""The budgeted sandbox: a template a person writes compiles and renders within a budget of
characters and of time, in the web process and the consumer alike.

Jinja's sandbox keeps a template away from Python's insides; it does not bound what the
template costs. Here three things do:

- **Nothing is computed while compiling.** Jinja folds constant expressions at compile time,
  so ``{{ ('a'*(10**9))|length }}`` would take a gigabyte inside ``from_string``. The optimizer
  is off, ``*``, ``**``, ``+`` and ``%`` are intercepted (an intercepted operator is never
  folded), and ``finalize`` takes the render's context, which keeps the code generator from
  folding what is written out.
- **Characters.** A value that could grow is weighed before it is made: the operators above,
  ``~``, the filters and string methods that pad, repeat or join (``center``, ``indent``,
  ``format``, ``join``, ``replace``, ``wordwrap``, ``batch``, ``slice``, ``ljust``...), and
  every value a call or a filter returns. Every character written, literal text included, is
  counted against the render's allowance, nested writes (a macro, a ``set`` block) each time.
- **Time.** Each step of a loop, each call, filter and operator checks the thread's CPU time
  against the render's deadline, so nested loops stop at the deadline, not after millions of
  iterations.

A template over its budget raises :class:`OverBudget`; a caller says so to the person
(a 422 at save and preview, a permanent failure at send).
"""

import re
import string
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from jinja2 import nodes, pass_context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

# A value (a string's characters, a list's items and theirs) weighs at most this.
MAX_VALUE = 100_000
# What one render may write in all, nested writes counted each time they are written.
MAX_WRITTEN = 400_000
# Thread CPU time one render may take; normal templates take well under a millisecond.
RENDER_SECONDS = 0.5
# The largest whole number a template may make (a 4,096-bit number has 1,234 digits).
MAX_INT_BITS = 4096
CHECK_EVERY = 32  # loop steps between two looks at the clock

_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?[diouxXeEfFgGcrsa%]")
_SPEC_NUMBERS = re.compile(r"\d+")


class OverBudget(Exception):
    """A template that would write too much, make too large a value, or take too long."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass
class _Budget:
    deadline: float  # time.thread_time() at which the render stops
    written_left: int
    steps: int = 0

    def tick(self) -> None:
        if time.thread_time() > self.deadline:
            raise OverBudget(f"takes longer than {RENDER_SECONDS:g} s to render")

    def step(self) -> None:
        self.steps += 1
        if self.steps % CHECK_EVERY == 0:
            self.tick()

    def write(self, chars: int) -> None:
        self.written_left -= chars
        if self.written_left < 0:
            raise OverBudget(f"writes more than {MAX_WRITTEN:,} characters")


_BUDGET: ContextVar[_Budget | None] = ContextVar("template_budget", default=None)


def _tick() -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.tick()


def weight(value, limit: int = MAX_VALUE) -> int:
    """What ``value`` weighs: a string's (or bytes') length, a container's items plus what they
    weigh; counting stops a little past ``limit``, so weighing a huge value is cheap."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
    return total


def _refuse_heavier(amount: int, what: str) -> None:
    if amount > MAX_VALUE:
        raise OverBudget(f"{what} would make a value of more than {MAX_VALUE:,} characters")


def _check_weight(value, what: str):
    if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)):
        _refuse_heavier(weight(value), what)
    return value


def _int_bits(value) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _check_printf(fmt: str, what: str) -> None:
    for match in _PRINTF.finditer(fmt):
        for number in match.groups():
            if number == "*":
                raise OverBudget(f"{what}: a '*' width is not allowed in a template")
            if number and int(number) > MAX_VALUE:
                _refuse_heavier(int(number), what)


def _check_format_spec(fmt: str, what: str) -> None:
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # format() itself says what is wrong with it
    for _literal, _field, spec, _conversion in parsed:
        if spec and "{" in spec:
            raise OverBudget(f"{what}: a nested format width is not allowed in a template")
        for number in _SPEC_NUMBERS.findall(spec or ""):
            _refuse_heavier(int(number), what)


def _occurrences(text: str, old: str, count) -> int:
    found = text.count(old) if old else len(text) + 1
    return min(found, count) if isinstance(count, int) and count >= 0 else found


def _check_join(items, separator, what: str) -> list:
    items = list(items)
    _refuse_heavier(sum(weight(str(item)) for item in items) + len(str(separator)) * len(items), what)
    return items


# -- the filters and methods that can make a value much larger than their inputs -------------


def _pre_center(value, width=80, *_):
    _refuse_heavier(max(len(str(value)), width if isinstance(width, int) else 0), "center")


def _pre_indent(value, width=4, *_args, **_kwargs):
    pad = len(width) if isinstance(width, str) else (width if isinstance(width, int) else 0)
    text = str(value)
    _refuse_heavier(len(text) + pad * (text.count("\n") + 1), "indent")


def _pre_format(value, *args, **kwargs):
    _check_printf(str(value), "format")


def _pre_replace(value, old="", new="", count=None):
    text = str(value)
    _refuse_heavier(len(text) + _occurrences(text, str(old), count) * len(str(new)), "replace")


def _pre_wordwrap(value, width=79, break_long_words=True, wrapstring=None, *_):
    text = str(value)
    lines = len(text) // max(width if isinstance(width, int) else 1, 1) + text.count("\n") + 1
    _refuse_heavier(len(text) + lines * len(str(wrapstring or "\n")), "wordwrap")


def _pre_batch(value, linecount=1, *_):
    _refuse_heavier(linecount if isinstance(linecount, int) else 0, "batch")


def _pre_slice(value, slices=1, *_):
    _refuse_heavier(slices if isinstance(slices, int) else 0, "slice")


def _pre_sum(value, attribute=None, start=0):
    if not isinstance(start, (int, float)):
        raise OverBudget("sum: adds numbers only in a template")


# filter name -> a check of its arguments (after any context Jinja passes) before it runs
_FILTER_CHECKS = {"center": _pre_center, "indent": _pre_indent, "format": _pre_format, "replace": _pre_replace,
                  "wordwrap": _pre_wordwrap, "batch": _pre_batch, "slice": _pre_slice, "sum": _pre_sum}


def _pre_pad(text: str, width=0, *_):
    _refuse_heavier(max(len(text), width if isinstance(width, int) else 0), "padding")


def _pre_expandtabs(text: str, tabsize=8):
    _refuse_heavier(len(text) + text.count("\t") * (tabsize if isinstance(tabsize, int) else 0), "expandtabs")


def _pre_str_replace(text: str, old="", new="", count=-1):
    _refuse_heavier(len(text) + _occurrences(text, str(old), count) * len(str(new)), "replace")


def _refused_method(text: str, *args, **kwargs):
    raise OverBudget("this string method is not allowed in a template")


# str method name -> a check of (the string, its arguments) before it runs
_STR_METHOD_CHECKS = {"center": _pre_pad, "ljust": _pre_pad, "rjust": _pre_pad, "zfill": _pre_pad,
                      "expandtabs": _pre_expandtabs,
                      "replace": _pre_str_replace, "translate": _refused_method, "maketrans": _refused_method}


def _budgeted_filter(name: str, original):
    check = _FILTER_CHECKS.get(name)
    passes = getattr(original, "jinja_pass_arg", None)

    def budgeted(*args, **kwargs):
        _tick()
        given = args[1:] if passes is not None else args
        if name == "join" and given:
            items = _check_join(given[0], given[1] if len(given) > 1 else kwargs.get("d", ""), "join")
            args = (*args[:len(args) - len(given)], items, *given[1:])
        elif check is not None and given:
            check(*given, **kwargs)
        return _check_weight(original(*args, **kwargs), name)

    if passes is not None:
        budgeted.jinja_pass_arg = passes
    budgeted.__name__ = getattr(original, "__name__", name)
    return budgeted


# -- compiling: loops counted, ~ weighed, literal text written through finalize ------------------


class _Budgeting(NodeTransformer):
    """Rewrites a parsed template so the budget sees every loop step, join (``~``) and write."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = nodes.Call(nodes.EnvironmentAttribute("budgeted_loop"), [node.iter], [], None, None,
                               lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Call:
        self.generic_visit(node)
        return nodes.Call(nodes.EnvironmentAttribute("budgeted_concat"), list(node.nodes), [], None, None,
                          lineno=node.lineno)

    def visit_Output(self, node: nodes.Output) -> nodes.Output:
        self.generic_visit(node)
        # Literal text as a constant: written through finalize, so it is counted like the rest.
        node.nodes = [nodes.Const(child.data, lineno=child.lineno) if isinstance(child, nodes.TemplateData) else child
                      for child in node.nodes]
        return node


@pass_context
def _written(_context, value):
    text = value if isinstance(value, str) else str(value)
    budget = _BUDGET.get()
    if budget is not None:
        budget.write(len(text))
    return text


class BudgetedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with a budget: see the module docstring. Render through :meth:`render`."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options):
        super().__init__(optimized=False, finalize=_written, **options)
        self.filters = {name: _budgeted_filter(name, original) for name, original in self.filters.items()}
        self.globals.pop("lipsum", None)  # lipsum(n) writes n paragraphs

    def _parse(self, source, name, filename):
        return _Budgeting().visit(super()._parse(source, name, filename))

    def wrap_str_format(self, value):
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def checked(*args, **kwargs):
            _check_format_spec(fmt, "format")
            return wrapped(*args, **kwargs)

        return checked

    def call_binop(self, context, operator, left, right):
        _tick()
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(times, int) and isinstance(seq, (str, bytes, list, tuple)):
                    _refuse_heavier(weight(seq) * max(times, 0), "'*'")
            if isinstance(left, int) and isinstance(right, int) and _int_bits(left) + _int_bits(right) > MAX_INT_BITS:
                raise OverBudget(f"'*' would make a number of more than {MAX_INT_BITS:,} bits")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 and _int_bits(left) > 1 \
                    and _int_bits(left) * right > MAX_INT_BITS:
                raise OverBudget(f"'**' would make a number of more than {MAX_INT_BITS:,} bits")
        elif operator == "+":
            if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
                _refuse_heavier(weight(left) + weight(right), "'+'")
        elif operator == "%" and isinstance(left, str):
            _check_printf(left, "'%'")
        result = super().call_binop(context, operator, left, right)
        if isinstance(result, int) and _int_bits(result) > MAX_INT_BITS:
            raise OverBudget(f"{operator!r} would make a number of more than {MAX_INT_BITS:,} bits")
        return result

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's own signature)
        _tick()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str) and type(__obj).__name__ == "builtin_function_or_method":
            if __obj.__name__ == "join" and args:
                args = (_check_join(args[0], owner, "join"), *args[1:])
            check = _STR_METHOD_CHECKS.get(__obj.__name__)
            if check is not None:
                check(owner, *args, **kwargs)
        return _check_weight(super().call(__context, __obj, *args, **kwargs), "a call")

    def budgeted_loop(self, iterable: Iterable) -> Iterator:
        """``iterable``, each step counted against the render's time."""
        budget = _BUDGET.get()
        for item in iterable:
            if budget is not None:
                budget.step()
            yield item

    def budgeted_concat(self, *parts) -> str:
        """``a ~ b ~ ...``, weighed before it is joined."""
        texts = [part if isinstance(part, str) else str(part) for part in parts]
        _refuse_heavier(sum(len(text) for text in texts), "'~'")
        return "".join(texts)

    def render(self, template, context: dict) -> str:
        """``template`` (compiled by this environment) rendered with ``context`` within the budget."""
        token = _BUDGET.set(_Budget(deadline=time.thread_time() + RENDER_SECONDS, written_left=MAX_WRITTEN))
        try:
            return template.render(context)
        finally:
            _BUDGET.reset(token)

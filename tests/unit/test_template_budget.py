"""The rendering budget (models.core.sandbox): template bombs are refused, at compile time and at
render time, without taking the memory or the time they ask for; ordinary templates render as before.

The bombs run in a child process whose address space is capped a quarter of a gigabyte above
what it uses, so a bomb that got past the budget fails the test with a MemoryError instead of
taking a gigabyte of the machine; the time bombs run under a timeout of their own.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from models.core.sandbox import MAX_INT_BITS, BudgetedSandbox, OverBudget
from models.drips.templates import SAMPLE_CONTACT, render, template_context

ROOT = Path(__file__).resolve().parents[2]
HEADROOM = 256 * 1024 * 1024  # what the capped child may allocate beyond what it uses at start

# Each asks for a gigabyte or more, or for a number of billions of digits.
MEMORY_BOMBS = [
    "{{ ('a'*(10**9))|length }}",
    "{{ 'a' * 1000000000 }}",
    "{{ ('ab' + 'a' * 99999) * 10000 }}",
    "{{ 'a'|center(1000000000) }}",
    "{{ 'a'|indent(1000000000) }}",
    "{{ '%1000000000d'|format(1) }}",
    "{{ '%1000000000d' % 1 }}",
    "{{ '{:>1000000000}'.format(1) }}",
    "{{ 'a'.ljust(1000000000) }}",
    "{{ 'a\tb'.expandtabs(1000000000) }}",
    "{{ 2 ** (2 ** 30) }}",
    "{{ (['a' * 99999] * 100000)|join|length }}",
    "{{ ('a' * 90000)|replace('a', 'aaaaaaaaaa') }}",
    "{{ range(10)|batch(1000000000, 'x')|list }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
    "{% autoescape 'a'|center(1000000000) %}x{% endautoescape %}",
]
# Each would run for hours.
TIME_BOMBS = [
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
    "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
]

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    used = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (used + {headroom}, used + {headroom}))
    from models.core.errors import InvalidInput
    from models.drips.templates import SAMPLE_CONTACT, TemplateProblem, check_template, render, template_context
    context = template_context(SAMPLE_CONTACT, campaign_name="Spring", step_number=1, unsubscribe_url=None)
    results = []
    for source in json.loads(sys.stdin.read()):
        started = time.monotonic()
        try:
            check_template(source, "steps[0].body")
            saved = "saved"
        except InvalidInput as exc:
            saved = [exc.code, exc.message]
        try:
            sent = ["rendered", len(render(source, context))]
        except TemplateProblem as exc:
            sent = [exc.over_budget, exc.message]
        results.append({{"source": source, "saved": saved, "sent": sent, "seconds": time.monotonic() - started}})
    print(json.dumps(results))
""").format(headroom=HEADROOM)


def _in_a_capped_child(sources: list[str], *, timeout: float) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(sources), capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_template_bomb_is_refused_at_save_and_at_send_without_the_memory_it_asks_for():
    for result in _in_a_capped_child(MEMORY_BOMBS, timeout=120):
        code, message = result["saved"]
        assert code == "over_budget" and message.startswith("steps[0].body is over the rendering budget: "), result
        over_budget, why = result["sent"]
        assert over_budget is True and why.startswith("template: over its rendering budget: "), result


def test_nested_loops_and_a_recursive_macro_stop_at_the_time_limit():
    for result in _in_a_capped_child(TIME_BOMBS, timeout=120):
        assert result["saved"][0] == "over_budget", result
        over_budget, why = result["sent"]
        assert over_budget is True and ("takes longer than" in why or "writes more than" in why), result
        assert result["seconds"] < 20, result


def test_compiling_computes_nothing_from_constants():
    env = BudgetedSandbox()
    code = env.compile("{{ ('a'*(10**9))|length }}{{ 'a'|center(1000000000) }}", raw=True)
    assert "call_binop(context, '*', 'a'" in code and "1000000000" in code  # left for the render, not folded


ORDINARY = [
    ("Hi {{ contact.first_name }}!", "Hi Ada!"),
    ("{% for i in range(3) %}{{ i }},{% endfor %}", "0,1,2,"),
    ("{{ 'ab' * 3 }} {{ 2 ** 10 }} {{ 7 % 3 }} {{ 'x' + 'y' }} {{ 'a' ~ 1 }}", "ababab 1024 1 xy a1"),
    ("{{ ['a', 'b']|join(', ') }}|{{ 'x'|center(5) }}|{{ '%05d'|format(42) }}|{{ '{:>3}'.format('x') }}",
     "a, b|  x  |00042|  x"),
    ("{{ 'a-b'.replace('-', '+') }} {{ 'ab'.ljust(4, '.') }} {{ [3, 1, 2]|sort|sum }}", "a+b ab.. 6"),
    ("{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m(contact.name) }}", "[Ada Lovelace]"),
    ("{% set ns = namespace(n=0) %}{% for c in contact.name %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}", "12"),
]


@pytest.mark.parametrize("source, expected", ORDINARY)
def test_an_ordinary_template_renders_as_it_always_did(source, expected):
    context = template_context(SAMPLE_CONTACT, campaign_name="Spring", step_number=1, unsubscribe_url=None)
    assert render(source, context) == expected


def test_the_largest_number_a_template_may_make_is_bounded_and_said():
    env = BudgetedSandbox()
    assert env.render(env.from_string("{{ (2 ** 100) * (2 ** 100) }}"), {}) == str(2 ** 200)
    with pytest.raises(OverBudget, match=f"{MAX_INT_BITS:,} bits"):
        env.render(env.from_string("{{ (2 ** 4000) * (2 ** 4000) }}"), {})

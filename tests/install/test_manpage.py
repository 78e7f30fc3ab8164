"""hopscope(8) tells every command that exists and every option each one
takes, as their --help gives them, and no command that does not exist."""
import os
import re
import sys

import pytest

from installkit import ROOT, SOURCE, binary, env, explain, run

PAGE = os.path.join(ROOT, "docs", "hopscope.8")


def page_source():
    with open(PAGE) as f:
        return f.read()


def page_text():
    """The page's words: escapes and font changes taken out."""
    text = page_source().replace("\\-", "-")
    return re.sub(r"\\f[BIRP]|\\[&|]", "", text)


def helps(*args):
    """--help of a command: the recorder's own, or the Python package's."""
    if args[0] in ("record", "--help"):
        r = run([binary(), *args])
    else:
        r = run([sys.executable, "-m", "hopscope", *args], env=env(PYTHONPATH=SOURCE))
    assert r.returncode == 0, explain(r)
    return r.stdout


def c_commands():
    """The commands `hopscope --help` lists."""
    return set(re.findall(r"^  ([a-z]+)  ", helps("--help"), re.M))


def python_commands():
    """The commands `python -m hopscope --help` lists."""
    r = run([sys.executable, "-m", "hopscope", "--help"], env=env(PYTHONPATH=SOURCE))
    assert r.returncode == 0, explain(r)
    return set(re.findall(r"^  ([a-z]+)  ", r.stdout.split("subcommands:", 1)[1], re.M))


def headings():
    """The first word of each COMMANDS subsection (.SS)."""
    commands = page_source().split(".SH COMMANDS", 1)[1].split(".SH ", 1)[0]
    out = []
    for line in commands.splitlines():
        if line.startswith(".SS "):
            words = line[4:].strip('"').replace("\\-", "-").split()
            out.append(" ".join(words[:2]) if words[0] == "scenario" else words[0].rstrip(","))
    return out


def sub_subcommands(help_text):
    """check|run or {check,run} in a usage line: a command with subcommands."""
    m = re.search(r"\s\{?([a-z]+(?:[|,][a-z]+)+)\}?\s+\.\.\.", help_text)
    return re.split(r"[|,]", m.group(1)) if m else []


def long_options(help_text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text))


def every_command():
    return sorted(c_commands() | python_commands())


def test_every_command_has_its_section():
    have = headings()
    for name in every_command():
        if name == "scenario":
            for sub in sub_subcommands(helps("scenario", "--help")):
                assert f"scenario {sub}" in have, f"docs/hopscope.8: no .SS for scenario {sub}"
        else:
            assert name in have, f"docs/hopscope.8: no .SS for {name}"


def test_no_section_for_a_command_that_does_not_exist():
    exist = set(every_command())
    for heading in headings():
        if heading.startswith("-"):  # -h, --help, help
            continue
        assert heading.split()[0] in exist, f"docs/hopscope.8 documents {heading!r}"


@pytest.mark.parametrize("name", ["record", "export", "verify", "describe", "report",
                                  "campaign", "throughput", "scenario", "serve", "top"])
def test_every_option_is_in_the_page(name):
    if name not in every_command():
        pytest.skip(f"no command {name}")
    text = page_text()
    texts = [helps(name, "--help")]
    texts += [helps(name, sub, "--help") for sub in sub_subcommands(texts[0])]
    for option in sorted(set().union(*map(long_options, texts))):
        assert option in text, f"docs/hopscope.8 does not tell `hopscope {name}` {option}"

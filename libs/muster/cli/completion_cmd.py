"""``muster completion bash|zsh``: shell completion for every subcommand and flag, and for the names
of the running system's jobs and queues.

eval "$(muster completion bash)"     # or add it to ~/.bashrc

Subcommands and flags are written into the script. Names are asked for as you type: a job for
``why``, ``logs`` and ``cancel``, a queue after ``--queue``, through ``muster __complete KIND PREFIX``
(which reads the projection); with no system running, nothing is completed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from muster.cli.parsing import subcommands


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion")
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(run=_run)


@dataclass
class Completion:
    """What may follow one command path (``''``: ``muster`` alone; ``'bench'``: ``muster bench``)."""

    words: list[str]
    """Its subcommands, then its ``--flags``."""
    valued: list[str] = field(default_factory=list)
    """Its options (short and long) that take a value: the word after one is that value."""
    names: dict[str, str] = field(default_factory=dict)
    """Where a name of the running system goes, and its kind: ``''`` for the first argument, or a flag."""


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))


def _valued(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in parser._actions if a.nargs != 0 for o in a.option_strings)


def _names(parser: argparse.ArgumentParser) -> dict[str, str]:
    names = {o: a.completes for a in parser._actions if hasattr(a, "completes") for o in a.option_strings}
    arguments = [
        a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    if arguments and hasattr(arguments[0], "completes"):
        names[""] = arguments[0].completes
    return names


def completions(parser: argparse.ArgumentParser) -> dict[str, Completion]:
    """What may follow each command path of ``parser``, every subcommand's parser built."""
    table: dict[str, Completion] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        children = subcommands(p)
        table[path] = Completion(sorted(children) + _flags(p), _valued(p), _names(p))
        for name, child in children.items():
            walk(child, f"{path} {name}".strip())

    walk(parser, "")
    return table


def words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Completion words per command path ('' = top level, 'bench' = after `muster bench`)."""
    return {path: c.words for path, c in completions(parser).items()}


def _case(function: str, doc: str, entries: dict[str, str]) -> str:
    cases = "\n".join(f'        "{key}") echo "{value}" ;;' for key, value in sorted(entries.items()))
    return f'{function}() {{  # {doc}\n    case "$1" in\n{cases}\n    esac\n}}\n'


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The completion script: three lookups by command path, and the function bash calls on Tab."""
    table = completions(parser)
    lookups = (
        _case("_muster_words", "subcommands and flags after a command path", {p: " ".join(c.words) for p, c in table.items()})
        + _case("_muster_valued", "its options that take a value", {p: " ".join(c.valued) for p, c in table.items() if c.valued})
        + _case(
            "_muster_names",
            '"PATH|FLAG" (or "PATH|" for its first argument): the kind of name that goes there',
            {f"{p}|{flag}": kind for p, c in table.items() for flag, kind in c.names.items()},
        )
    )  # fmt: skip
    return f"""# muster completion for bash: eval "$(muster completion bash)"
{lookups}_muster() {{
    local cur path="" flag="" arguments=0 w kind=""
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        if [[ -n "$flag" ]]; then flag=""; continue; fi  # a flag's value
        case "$w" in
            -*) [[ " $(_muster_valued "$path") " == *" $w "* ]] && flag="$w" ;;
            *) if (( arguments == 0 )) && [[ " $(_muster_words "$path") " == *" $w "* ]]; then
                   path="${{path:+$path }}$w"
               else
                   arguments=$((arguments + 1))
               fi ;;
        esac
    done
    if [[ -n "$flag" ]]; then
        kind="$(_muster_names "$path|$flag")"
        if [[ -z "$kind" ]]; then COMPREPLY=( $(compgen -f -- "$cur") ); return; fi
    elif [[ "$cur" != -* ]] && (( arguments == 0 )); then
        kind="$(_muster_names "$path|")"
    fi
    if [[ -n "$kind" ]]; then
        # Names from the running system, through the muster being completed; none when it runs no system.
        COMPREPLY=( $("${{COMP_WORDS[0]}}" __complete "$kind" "$cur" 2>/dev/null) )
        return
    fi
    COMPREPLY=( $(compgen -W "$(_muster_words "$path")" -- "$cur") )
    [[ ${{#COMPREPLY[@]}} -eq 0 ]] && COMPREPLY=( $(compgen -f -- "$cur") )
}}
complete -F _muster muster
"""


def _run(args: argparse.Namespace) -> int:
    from muster.cli.main import build_parser

    script = bash_script(build_parser())
    if args.shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    print(script, end="")
    return 0

"""``muster completion bash|zsh``: shell completion for every subcommand and flag.

eval "$(muster completion bash)"     # or add it to ~/.bashrc
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(run=_run)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))


def words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Completion words per command path ('' = top level, 'bench' = after `muster bench`)."""
    table: dict[str, list[str]] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        children = _subparsers(p)
        table[path] = sorted(children) + _flags(p)
        for name, child in children.items():
            walk(child, f"{path} {name}".strip())

    walk(parser, "")
    return table


def bash_script(parser: argparse.ArgumentParser) -> str:
    cases = "\n".join(
        f'        "{path}") opts="{" ".join(w)}" ;;' for path, w in sorted(words(parser).items())
    )
    return f"""# muster completion for bash: eval "$(muster completion bash)"
_muster() {{
    local cur path="" opts w
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$w" in -*) ;; *) [[ -n "$path" ]] && path="$path $w" || path="$w" ;; esac
    done
    while true; do
        case "$path" in
{cases}
        *) if [[ "$path" == *" "* ]]; then path="${{path% *}}"; continue; fi; opts="" ;;
        esac
        break
    done
    COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
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

"""``heliostat completion bash|zsh|tcsh``: a shell completion script (shtab) for every
command, action and option, generated from the same parser the CLI uses.

    heliostat completion bash | sudo tee /etc/bash_completion.d/heliostat
    heliostat completion zsh > "${fpath[1]}/_heliostat"
"""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "tcsh")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or tcsh)")
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> int:
    import shtab

    parser = args.full_parser()  # the CLI's parser with every command: imports them all, once
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return 0

"""``clsim list``: the library's kernels with one-line descriptions."""

from __future__ import annotations

HELP = "list the library's kernels"


def add_arguments(parser) -> None:
    parser.add_argument("--family", help="only kernels of this family (e.g. softmax)")


def main(args) -> int:
    from clsim.spec import all_specs

    specs = all_specs()
    rows = [s for s in specs.values() if not args.family or s.family_name == args.family]
    width = max((len(s.name) for s in rows), default=4)
    for spec in rows:
        needs = f"  [needs {', '.join(sorted(spec.requires))}]" if spec.requires else ""
        print(f"{spec.name:<{width}}  {spec.description}{needs}")
    return 0

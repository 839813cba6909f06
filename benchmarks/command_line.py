"""A benchmark's command line, declared as keywords:

    args = command_line(binary=REQUIRED, seconds=(10.0, "seconds of each run"), output=None)

is `--binary` (required), `--seconds` (a float, 10 unless given, with its help) and
`--output` (a string, None unless given). A default's type is the option's type; False
makes a flag. One declaration a script, so that 27 scripts do not each spell argparse."""
import argparse

REQUIRED = object()


def command_line(**options):
    parser = argparse.ArgumentParser()
    for name, declared in options.items():
        default, help_text = declared if isinstance(declared, tuple) else (declared, None)
        flag = "--" + name.replace("_", "-")
        if default is REQUIRED:
            parser.add_argument(flag, required=True, help=help_text)
        elif default is False:
            parser.add_argument(flag, action="store_true", help=help_text)
        elif default is None:
            parser.add_argument(flag, help=help_text)
        else:
            parser.add_argument(flag, type=type(default), default=default, help=help_text)
    return parser.parse_args()

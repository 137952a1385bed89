#!/usr/bin/env python3
"""Every number in the JSON files given is an integer or a float32's shortest text.

usage: json_numbers.py FILE...

headscope prints one float format everywhere (common's hs_fmt_f32: the
shortest decimal that reads back as the same float32) and JSON is no
exception (common's hs_json_print): a number token is either an integer
(no '.', no exponent) or exactly the shortest text of the float32 nearest
it, so 0.1 passes and 0.10416666666666667 (a double's 17 digits) fails.
Exits 1 naming the first offending token of each file.
"""
import json
import sys
from decimal import Decimal

import numpy as np


def check_float(tok, bad):
    f = np.float32(float(tok))
    short = np.format_float_scientific(f, unique=True)
    if not np.isfinite(f) or Decimal(tok) != Decimal(short):
        bad.append("%s (float32 shortest: %s)" % (tok, short))
    return float(tok)


def main():
    failed = 0
    for path in sys.argv[1:]:
        bad, count = [], [0]

        def on_float(tok):
            count[0] += 1
            return check_float(tok, bad)

        def on_int(tok):
            count[0] += 1
            return int(tok)

        with open(path) as f:
            json.load(f, parse_float=on_float, parse_int=on_int)
        if bad:
            failed = 1
            print("%s: %d of %d numbers are not a float32's shortest text, e.g. %s"
                  % (path, len(bad), count[0], ", ".join(bad[:3])), file=sys.stderr)
        elif count[0] == 0:
            failed = 1
            print("%s: no numbers (nothing was checked)" % path, file=sys.stderr)
    sys.exit(failed)


if __name__ == "__main__":
    main()

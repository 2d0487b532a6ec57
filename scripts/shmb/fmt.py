"""Figures as text: times, ratios, changes, shares, sizes."""
import math

from .stats import change_of


def fmt(v):
    if v is None:
        return "-"
    return "%.0f" % v if v >= 100 else "%.1f" % v if v >= 10 else "%.2f" % v


def fmt_p(p):
    return "-" if p is None else ("%.3f" % p if p >= 0.001 else "%.0e" % p)


def fmt_change(a, b):
    return "%+.1f%%" % (change_of(a, b) * 100) if a and b else "-"


def fmt_ratio(pair):
    """'1.10 [1.07, 1.13]' (no interval: '1.10 [-]')."""
    if not pair.has_interval:
        return "%s [-]" % fmt_r(pair.ratio)
    fine = pair.hi - pair.lo < 0.02  # three decimals, or a narrow interval reads [1.00, 1.00]
    return "%s [%s, %s]" % tuple(fmt_r(r, fine) for r in (pair.ratio, pair.lo, pair.hi))


def fmt_r(r, fine=False):
    """A ratio: two decimals (three if fine), two significant digits below 0.1, none from 100."""
    if r < 0.1:
        return "%.2g" % r
    return ("%.3f" if fine else "%.2f") % r if r < 10 else "%.1f" % r if r < 100 else "%.0f" % r


def fmt_saved(pair):
    """'184 [180, 188]' ns saved per operation (negative: slower)."""
    if pair.saved_lo is None or pair.saved_hi is None:
        return "%s [-]" % fmt_signed(pair.saved)
    return "%s [%s, %s]" % tuple(fmt_signed(v) for v in (pair.saved, pair.saved_lo, pair.saved_hi))


def fmt_signed(v):
    return fmt(v) if v >= 0 else "-" + fmt(-v)


def size_label(kb):
    """4 -> '4K', 1024 -> '1M', 65536 -> '64M' (1 K = 1024 bytes)."""
    for unit, scale in (("G", 1024 * 1024), ("M", 1024), ("K", 1)):
        if kb >= scale and kb % scale == 0:
            return "%d%s" % (kb // scale, unit)
    return "%gK" % kb


def time_label(ns):
    """A tick label of a time in ns: 500 ns, 2 µs, 10 ms."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return "%g %s" % (ns / scale, unit)
    return "%g ns" % ns


def fmt_time(ns):
    """3 significant digits in ns, µs, ms or s: '60.2 ns', '1.22 µs', '-57.0 ns'."""
    a = abs(ns)
    unit, scale = next((u, s) for u, s in (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
                       if a >= s or u == "ns")
    v = ns / scale
    digits = 0 if v == 0 else max(0, 2 - int(math.floor(math.log10(abs(v)))))
    text = "%.*f" % (digits, v)
    if float(text) != 0 and abs(float(text)) >= 1000 and unit != "s":
        return fmt_time(math.copysign(1000 * scale, ns))  # 999.7 ns rounds to 1.00 µs
    return "%s %s" % (text, unit)


def fmt_gain(g):
    return fmt_r(g) + "x"


def ends_text(lo, hi, sign=1):
    """' [3.93 ns, 6.90 ns]' of an interval saved (sign -1: of the cost), '' without one."""
    if lo is None or hi is None:
        return ""
    return " [%s, %s]" % tuple(fmt_time(sign * v) for v in sorted((lo, hi), key=lambda v: sign * v))


def change_text(saved, lo, hi):
    """'saves 184 ns [180 ns, 188 ns]' or 'costs 24.5 ns more [21.5 ns, 26.7 ns]'."""
    if saved >= 0:
        return "saves %s%s" % (fmt_time(saved), ends_text(lo, hi))
    return "costs %s more%s" % (fmt_time(-saved), ends_text(lo, hi, -1))


def fmt_pct(share):
    p = 100 * share
    return "%.1f%%" % p if abs(p) < 10 else "%.0f%%" % p


def md_row(cells):
    """A markdown table's row."""
    return "| " + " | ".join(cells) + " |"


def md_head(head):
    """A markdown table's header and its rule."""
    return [md_row(head), "|" + "---|" * len(head)]


def fmt_size(kb):
    return size_label(kb).replace("K", " KB").replace("M", " MB").replace("G", " GB")

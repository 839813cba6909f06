"""A trace drawn as a tracing backend's timeline shows it (Jaeger, Tempo): one row per
span, indented under its parent, a bar from its start to its end on a shared time axis.
No such backend runs here (no Docker, none in Debian), so the tracing test draws the
trace it received with this, and docs/operations.md shows the picture.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

# A colour per kind of span, as a backend colours by service and operation.
COLOURS = {"roboscope.db": "#4c72b0", "roboscope.redis": "#8172b2", "roboscope.append": "#c44e52",
           "roboscope.deliver": "#55a868"}
REQUEST_COLOUR = "#dd8452"
# What a row says beside the span's name.
DETAILS = ("db.operation", "roboscope.pool", "roboscope.position", "roboscope.subscribers", "roboscope.topic",
           "roboscope.tenant")


def ordered(spans):
    """Depth-first from the roots (spans whose parent is not in the trace, such as the
    device's own span), children by start time: (depth, span) pairs."""
    ids = {span.span_id for span in spans}
    children = {}
    for span in spans:
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else b"", []).append(span)
    rows = []

    def visit(parent, depth):
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time_unix_nano):
            rows.append((depth, span))
            visit(span.span_id, depth + 1)
    visit(b"", 0)
    return rows


def short(value):
    """A topic's id cut to its first eight digits, as backends elide long values."""
    text = str(value)
    kind, _, ident = text.partition(":")
    return f"{kind}:{ident[:8]}…" if len(ident) == 36 else text


def label(span, attributes):
    """The span's name and what it is about (the tenant only on the request's own row)."""
    values = attributes(span)
    keys = [key for key in DETAILS if key in values
            and not (key == "roboscope.tenant" and span.name.startswith("roboscope."))]
    details = ", ".join(f"{key.split('.')[-1]} {short(values[key])}" for key in keys)
    return span.name + (f"  ({details})" if details else "")


def draw(spans, attributes, title, path):
    """Writes the timeline of `spans` (one trace) to `path` (PNG); returns the rows drawn."""
    rows = ordered(spans)
    start = min(span.start_time_unix_nano for span in spans)
    end = max(span.end_time_unix_nano for span in spans)
    total = max(end - start, 1) / 1e6
    figure, axes = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    names = blended_transform_factory(axes.transAxes, axes.transData)
    for index, (depth, span) in enumerate(rows):
        left = (span.start_time_unix_nano - start) / 1e6
        width = max((span.end_time_unix_nano - span.start_time_unix_nano) / 1e6, total / 400)
        colour = COLOURS.get(span.name, REQUEST_COLOUR)
        axes.barh(index, width, left=left, height=0.6, color=colour)
        axes.text(left + width + total / 150, index, f"{width:.2f} ms", va="center", fontsize=8)
        # The names in a column left of the time axis, indented by depth as a tree.
        axes.text(-1.0, index, "   " * depth + label(span, attributes), va="center", ha="left", fontsize=8,
                  family="monospace", transform=names)
    axes.set_yticks([])
    axes.set_ylim(len(rows) - 0.4, -0.6)
    axes.set_xlim(0, total * 1.12)
    axes.set_xlabel("milliseconds since the trace's first span")
    axes.set_title(title, fontsize=9)
    axes.grid(axis="x", alpha=0.3)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return rows

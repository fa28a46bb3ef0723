"""bertviz's head view and model view as standalone HTML pages that fetch nothing.

bertviz builds the view (`html_action="return"`) and points require.js at a CDN for d3
and jQuery. Here the CDN tags go, and the copies vendored from npm into assets/vendor
are inlined, so the view draws with no network: in the app's iframe, and in the file a
learner downloads. The tokens travel as JSON inside a <script>: every <, > and & in it
is escaped, so text such as `</script><img onerror=...>` is drawn as text and runs nothing.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Literal

import numpy as np

from components.i18n import t_plain

VENDOR = Path(__file__).resolve().parent.parent / "assets" / "vendor"
# d3 and jQuery load first, as plain globals: loaded after require.js they would call an
# anonymous define() and require.js would refuse them. Then they are named for bertviz.
LIBRARIES = ("d3.min.js", "jquery.min.js", "require.js")
NAME_MODULES = (
    'define("d3", [], function () { return window.d3; });\ndefine("jquery", [], function () { return window.jQuery; });'
)
_CDN_TAG = re.compile(r"<script\s+src=\"https?://[^\"]*\"\s*>\s*</script>")
_ROOT_ID = re.compile(r'"root_div_id":\s*"([^"]+)"')
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.S)
DECIMALS = 2  # attention weights in the page: the view draws them as line opacity; 2 decimals halve the page

View = Literal["head", "model"]
# bertviz draws the head view 335 px wide at 15 px text: scaled up with the frame's width, to 1.6 times
# (536 px, 24 px text) on a projector, so the back row reads the tokens; a phone keeps bertviz's size.
HEAD_SIZES = """    const TEXT_SIZE = 15;
    const BOXWIDTH = 110;
    const BOXHEIGHT = 22.5;
    const MATRIX_WIDTH = 115;
    const CHECKBOX_SIZE = 20;
    const TEXT_TOP = 30;"""
HEAD_SCALED = """    const SCALE = Math.max(1, Math.min(1.6, ((window.innerWidth || 351) - 16) / 335));
    const TEXT_SIZE = 15 * SCALE;
    const BOXWIDTH = 110 * SCALE;
    const BOXHEIGHT = 22.5 * SCALE;
    const MATRIX_WIDTH = 115 * SCALE;
    const CHECKBOX_SIZE = 20 * SCALE;
    const TEXT_TOP = 30 * SCALE;"""
# bertviz colours the head view's heads with d3's ten colours, so a model of twelve heads (BERT, MiniLM, GPT-2)
# drew heads 11 and 12 in the colours of heads 1 and 2. Ten more, darker, after d3's ten: twenty heads apart.
HEAD_COLOURS = (
    "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf "
    "#393b79 #637939 #8c6d31 #843c39 #7b4173 #5254a3 #ad494a #a55194 #6b6ecf #e7ba52"
).split()
# Edits to bertviz's code: layers and heads numbered from 1 as on the rest of the page, a head view scaled
# to its frame, its heads in colours of their own, and a model view as wide as its frame (bertviz fixes it at
# 970 px). Each must apply exactly once.
PATCHES: dict[str, tuple[tuple[str, str], ...]] = {
    "head": (
        (".val(layer).text(layer));", ".val(layer).text(layer + 1));"),
        (HEAD_SIZES, HEAD_SCALED),
        ("d3.scaleOrdinal(d3.schemeCategory10);", f"d3.scaleOrdinal({json.dumps(HEAD_COLOURS)});"),
    ),
    "model": (
        ("const DIV_WIDTH = 970;", "const DIV_WIDTH = Math.max(480, Math.min(970, (window.innerWidth || 970) - 16));"),
        (".text(config.heads[i])", ".text(config.heads[i] + 1)"),
        (".text(config.layers[i])", ".text(config.layers[i] + 1)"),
        (
            "'Layer ' + config.layers[layerIndex] + \", Head \" + config.heads[headIndex]",
            "'Layer ' + (config.layers[layerIndex] + 1) + \", Head \" + (config.heads[headIndex] + 1)",
        ),
    ),
}


@cache
def _vendor_scripts() -> str:
    return "\n".join(f"<script>\n{(VENDOR / name).read_text(encoding='utf-8')}\n</script>" for name in LIBRARIES)


def _bertviz_js(view: View) -> str:
    import bertviz

    return (Path(bertviz.__file__).parent / f"{view}_view.js").read_text(encoding="utf-8")


@cache
def _original_template(view: View) -> list[str]:
    """bertviz's JavaScript for `view` as it ships, split at each marker where it puts its parameters.

    (The marker is also named in a comment, and bertviz fills that one in too.)
    """
    return _bertviz_js(view).split("PYTHON_PARAMS")


@cache
def _template(view: View) -> list[str]:
    """The same, with PATCHES applied."""
    source = _bertviz_js(view)
    for old, new in PATCHES[view]:
        if source.count(old) != 1:
            raise RuntimeError(f"bertviz's {view}_view.js has changed: cannot find {old!r}")
        source = source.replace(old, new)
    return source.split("PYTHON_PARAMS")


def script_json(value: object) -> str:
    """JSON that is safe inside a <script> element: no <, > or & can close it or open a tag."""
    return _script_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _script_safe(text: str) -> str:
    """JSON text with <, >, & and the JS line separators escaped (valid JSON, same value)."""
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


def build_bertviz_html(
    view: View,
    tokens: list[str],
    attentions: np.ndarray,
    sentence_b_start: int | None = None,
    title: str = "",
    labels: dict[str, str] | None = None,
) -> str:
    """A complete HTML page with bertviz's `view` of `attentions`; `labels` ({"layer", "heads", "layers"}: the
    learner's language, bertviz_labels) replace bertviz's English "Layer:", "Heads" and "Layers".

    attentions: (layers, heads, tokens, tokens), each row a distribution over the tokens.
    The page's element ids come from its content, so the same view gives the same bytes
    (Streamlit then sends an unchanged view to the browser once).
    """
    import torch
    from bertviz import head_view, model_view

    per_layer = [torch.from_numpy(np.round(layer.astype(np.float64), DECIMALS))[None] for layer in attentions]
    if view == "head":
        made = head_view(per_layer, tokens, sentence_b_start, html_action="return")
    else:
        made = model_view(per_layer, tokens, sentence_b_start, display_mode="light", html_action="return")
    page = made.data
    original = _original_template(view)
    start = page.index(original[0])
    end = page.rindex(original[-1]) + len(original[-1])
    # The script is bertviz's code joined by the parameters' JSON: its length tells where the first copy ends.
    filled = (end - start - sum(map(len, original))) // (len(original) - 1)
    params = page[start + len(original[0]) : start + len(original[0]) + filled]
    parts = _template(view)
    # The JSON is used as bertviz wrote it (parsing and writing it again took most of a rerun):
    # only its random root_div_id is replaced by one made from the content, and made script-safe.
    found = _ROOT_ID.search(params)
    if found is None:
        raise RuntimeError("bertviz's parameters have changed: no root_div_id")
    old_id = found.group(1)  # a random uuid, which no token can guess
    new_id = "bertviz-" + hashlib.sha1((view + params.replace(old_id, "")).encode()).hexdigest()[:16]
    markup = _CDN_TAG.sub("", page[:start]).replace(old_id, new_id)
    # The parameters once, where the code reads them; the comment keeps naming the marker.
    code = parts[0] + _script_safe(params.replace(old_id, new_id)) + "PYTHON_PARAMS".join(parts[1:])
    script = _REQUIRE_CONFIG.sub("", code) + page[end:]
    if labels:  # as text: the markup's label escaped, the script's as a script-safe JSON string
        markup = markup.replace("Layer: <select", html.escape(labels["layer"]) + " <select")
        for english, key in (("Heads", "heads"), ("Layers", "layers")):
            script = script.replace(
                f'.text("{english}")', f".text({_script_safe(json.dumps(labels[key], ensure_ascii=False))})"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        "<style>body { margin: 0; padding: 8px; background: white; color: black; }\n"
        # the view's box scrolls sideways: the app's iframe does not, and on a phone the model view's heads
        # 9-12 lay past its right edge, out of reach
        'div[id^="bertviz-"] { overflow-x: auto; max-width: 100%; }\n'
        # bertviz's layer and filter pickers are the browser's default 13 px, about 30 px wide: a projector's
        # back row could not read them, nor a finger hit them. As large as the head view's tokens at most.
        'div[id^="bertviz-"] select { font-size: clamp(15px, 2.8vw, 24px); min-width: 3.5em; min-height: 1.8em; }\n'
        'div[id^="bertviz-"] span { font-size: clamp(15px, 2.8vw, 24px); }</style>\n'
        f"{_vendor_scripts()}\n<script>\n{NAME_MODULES}\n</script>\n</head>\n<body>\n"
        f"{markup}{script}</body>\n</html>\n"
    )


def bertviz_builder() -> Callable[..., str]:
    """build_bertviz_html with bertviz's own words ("Layer:", "Heads", "Layers") in the learner's language: what
    the pages hand serving.attention_page (whose cache key holds the language through the page's title)."""
    labels = {key: t_plain(f"attn.bertviz_{key}") for key in ("layer", "heads", "layers")}
    return partial(build_bertviz_html, labels=labels)

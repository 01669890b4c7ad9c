"""The console's colours keep text readable: every text colour the stylesheet sets is at least
4.5:1 against the background it is drawn on (WCAG 2 AA), and input borders at least 3:1
(AA for the parts of a control), computed from the stylesheet itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = Path(__file__).resolve().parents[3] / "api" / "console" / "static" / "console.css"


def _variables(css: str) -> dict[str, str]:
    root = re.search(r":root\s*\{([^}]*)\}", css)
    assert root is not None
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", root.group(1)))


def _rule(css: str, selector: str) -> dict[str, str]:
    """The declarations of the first rule whose selector list is exactly `selector`."""
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if selectors.strip() == selector:
            return {
                name.strip(): value.strip()
                for name, value in re.findall(r"([\w-]+)\s*:\s*([^;]+)", body)
            }
    raise AssertionError(f"no rule {selector!r} in {CSS.name}")


def _colour(value: str, variables: dict[str, str]) -> str:
    found = re.search(r"var\(--([\w-]+)\)|(#[0-9a-fA-F]{3,6})", value)
    assert found is not None, value
    return variables[found.group(1)] if found.group(1) else found.group(2)


def _luminance(colour: str) -> float:
    hex_ = colour.lstrip("#")
    if len(hex_) == 3:
        hex_ = "".join(c * 2 for c in hex_)
    channels = [int(hex_[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


# (selector of the text colour, property, selector of the background, property)
TEXT_ON_BACKGROUND = [
    ("body", "color", "body", "background"),
    ("a", "color", "body", "background"),
    ("a", "color", "thead th", "background"),
    (".help", "color", "body", "background"),
    (".help", "color", "thead th", "background"),
    (".error, .field-errors", "color", "body", "background"),
    (".error, .field-errors", "color", ".summary", "background"),
    (".status-completed", "color", "body", "background"),
    (".status-failed", "color", "body", "background"),
    (".status-running, .status-queued", "color", "body", "background"),
    (".top", "color", ".top", "background"),
    (".top a", "color", ".top", "background"),
    ("button, .button", "color", "button, .button", "background"),
    ("button.secondary, .button.secondary", "color", "button.secondary, .button.secondary",
     "background"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "text_property", "ground", "ground_property"), TEXT_ON_BACKGROUND)
def test_text_is_at_least_4_5_to_1(
    text: str, text_property: str, ground: str, ground_property: str
) -> None:
    css = CSS.read_text()
    variables = _variables(css)
    foreground = _colour(_rule(css, text)[text_property], variables)
    background = _colour(_rule(css, ground)[ground_property], variables)
    assert contrast(foreground, background) >= 4.5, (text, foreground, ground, background)


def test_input_borders_are_at_least_3_to_1() -> None:
    css = CSS.read_text()
    variables = _variables(css)
    inputs = _rule(css, "input:not([type=checkbox]):not([type=radio]), select, textarea")
    border = _colour(inputs["border"], variables)
    assert contrast(border, _colour(inputs["background"], variables)) >= 3.0

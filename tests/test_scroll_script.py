"""The lesson's scroll-to-heading script (vizhooks.page.present.scroll_script) carries the step's
heading text as a JavaScript string: it finds the heading by that text (tests/e2e/test_lesson_steps.py
walks it in Chromium), so the text must arrive whole and must not end the script early."""

from __future__ import annotations

import json
import re

from vizhooks.page.present import NAV_KEY, scroll_script, step_anchor


def _literal(script: str) -> str:
    found = re.search(r"words\(e\) === (\".*?(?<!\\)\");", script)
    assert found, script
    return json.loads(found.group(1))


def test_the_heading_text_arrives_whole_with_quotes_and_markup():
    heading = 'Step 2 of 5: a "quoted" </script>  title\nwith 中文'
    script = scroll_script(7, 4, heading)
    # white space collapsed, as the script reads the page's text
    assert _literal(script) == 'Step 2 of 5: a "quoted" </script> title with 中文'
    assert script.count("</script>") == 1  # only the script's own end
    assert script.rstrip().endswith("</script>")


def test_each_step_change_is_its_own_script_with_its_anchor_and_row():
    first, second = scroll_script(1, 3, "Step 1 of 2: A"), scroll_script(2, 3, "Step 1 of 2: A")
    assert first != second  # Streamlit runs a script again only when its text changed
    assert f'getElementById("{step_anchor(3)}")' in first
    assert f".st-key-{NAV_KEY}" in first
    assert not re.search(r"\b(TURN|ANCHOR|NAV_KEY|HEADING)\b", first)

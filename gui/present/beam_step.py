"""Step mode's view of a beam lane's proposed step (Qt-free): every beam the step extends — its text so far and
its score — with its best candidates after the lane's processors, each marked as the search used it."""

from __future__ import annotations

import html
from collections.abc import Sequence

from decoding.engine.lane_state import BeamParent
from decoding.records.trace import BeamHypothesis, TokenProb
from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import display_token
from gui.present.lane_html import format_prob

KEPT, FINISHED = "✓", "■"
TEXT_TAIL = 48  # characters of a beam's text shown (its end: where the step continues it)


def beam_step_html(beams: Sequence[BeamParent], hypotheses: Sequence[BeamHypothesis], count: int = 5) -> str:
    """Each beam as a line (number, score, the end of its text), then its `count` best candidates (and any the
    search kept or finished beyond them) with their processed probabilities."""
    scheme = colours.current()
    fate = {(h.parent, h.token_id): h for h in hypotheses}
    keys = translate("beam_step", "{kept} kept: a beam from now on · {finished} finished · the others pruned")
    title = translate("beam_step", "Every beam at this step")
    lines = [f"<b>{html.escape(title)}</b> "
             f"<span style='color:{scheme.muted}'>"
             f"{html.escape(keys.format(kept=KEPT, finished=FINISHED))}</span>"]
    for beam in beams:
        tail = beam.text if len(beam.text) <= TEXT_TAIL else "…" + beam.text[-TEXT_TAIL:]
        head = translate("beam_step", "beam {beam} · score {score}").format(beam=beam.beam + 1,
                                                                          score=f"{beam.score:.3f}")
        lines.append(f"<br><b>{html.escape(head)}</b> <span style='color:{scheme.muted}'>"
                     f"“{html.escape(tail)}”</span>")
        shown = [t for t in beam.record.top if t.rank < count or (beam.beam, t.id) in fate]
        cells = [_candidate(t, fate.get((beam.beam, t.id)), scheme) for t in shown]
        lines.append("<br>&nbsp;&nbsp;" + " &nbsp;· ".join(cells))
    return "".join(lines)


def _candidate(token: TokenProb, hypothesis: BeamHypothesis | None, scheme: colours.Colours) -> str:
    text = html.escape(display_token(token.text, 16)) + "&nbsp;" + format_prob(token.prob)
    if hypothesis is not None and hypothesis.kept:
        return f"<b style='color:{scheme.beam_kept}'>{KEPT}&nbsp;{text}</b>"
    if hypothesis is not None and hypothesis.finished:
        return f"<b style='color:{scheme.beam_finished}'>{FINISHED}&nbsp;{text}</b>"
    return f"<span style='color:{scheme.muted}'>{text}</span>"

"""The gap cut again where it was: each edit of a problem's text moves the gap's two ends
by what it adds or removes before them, so the gap holds the same lines, or the same span, of the
canonical solution.
"""

from .text import Edit, applied


def _moved(offset: int, edits: list[Edit], gap_start: bool) -> int:
    """Where a gap's end at `offset` is once `edits` are made. Text inserted exactly at a gap's
    end stays outside the gap (the prompt keeps what is inserted at the gap's start, the suffix
    what is inserted at its end); an end inside a replaced piece (a name the gap cuts through)
    keeps its share of the piece, still inside it."""
    shift = 0
    for edit in sorted(edits):
        if edit.end < offset or (edit.end == offset and (edit.start < edit.end or gap_start)):
            shift += len(edit.text) - (edit.end - edit.start)
        elif edit.start < offset < edit.end:
            share = round((offset - edit.start) * len(edit.text) / (edit.end - edit.start))
            if len(edit.text) >= 2:
                share = min(max(share, 1), len(edit.text) - 1)
            return edit.start + shift + share
        else:
            break
    return offset + shift


def cut_gap(text: str, start: int, end: int, edits: list[Edit]) -> tuple[str, str, str]:
    """Prompt, gap and suffix of the edited text, the gap where it was in `text`."""
    edited = applied(text, edits)
    new_start = _moved(start, edits, gap_start=True)
    new_end = max(_moved(end, edits, gap_start=False), new_start)
    if start < end and new_start == new_end:
        new_start, new_end = _inside_one_name(start, end, new_start, edits)
    return edited[:new_start], edited[new_start:new_end], edited[new_end:]


def _inside_one_name(start: int, end: int, new_start: int, edits: list[Edit]) -> tuple[int, int]:
    """The new ends of a gap that lies inside one renamed name, where both ends' shares of the
    new, shorter name fell on the same letter: the gap keeps a letter of it (an empty gap would
    make nothing the right answer), with a letter of the name before and after it where the new
    name has three or more, as the old name had around the gap."""
    piece = next((e for e in edits if e.start < start and end < e.end), None)
    if piece is None or len(piece.text) < 2:
        return new_start, new_start
    piece_start = _moved(piece.start, edits, gap_start=True)  # where the new name starts
    share = min(new_start - piece_start, max(len(piece.text) - 2, 1))
    return piece_start + share, piece_start + share + 1

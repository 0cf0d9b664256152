"""The three checklists: their items, what each asks and which answer answers it, and their tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from showwork.report.checklist import answers
from showwork.report.checklist.answers import NOT_RECORDED, Answer, Facts, family_facts
from showwork.report.contents import Report
from showwork.report.tables import Table

__all__ = ["ALL_FAMILIES", "ARR", "CHECKLISTS", "CHECKLIST_VERSIONS", "DODGE", "NEURIPS", "ChecklistItem", "build_checklist",
           "checklist_tables"]

DODGE = "Dodge et al. 2019, Text Box 1"
ARR = "ACL Rolling Review (Responsible NLP checklist), section C"
NEURIPS = "NeurIPS paper checklist"
CHECKLIST_VERSIONS = {
    DODGE: "2019 (EMNLP-IJCNLP, Text Box 1)",
    ARR: "2025 (C2 asks which dataset was used to determine the hyperparameters)",
    NEURIPS: "not dated here (items 4–8 as this module words them)",
}
"""The version of each checklist's text that the items answer, dated: update the date with the text."""
CHECKLISTS = (DODGE, ARR, NEURIPS)
"""The checklists, in the order of :func:`build_checklist`."""
ALL_FAMILIES = "all"
"""The family name of an answer that is the same for every family."""

_TABLES = {
    DODGE: ("checklist_dodge", "Reproducibility checklist of Dodge et al. (2019), Text Box 1"),
    ARR: ("checklist_arr", "ACL Rolling Review, Responsible NLP checklist, section C (computational experiments), version of 2025"),
    NEURIPS: ("checklist_neurips", "NeurIPS paper checklist, items 4–8 (experiments)"),
}


@dataclass(frozen=True)
class ChecklistItem:
    """One item of a checklist and its answers.

    Attributes
    ----------
    checklist : str
        :data:`DODGE`, :data:`ARR` or :data:`NEURIPS`.
    number : str
        The item's number in its checklist: ``"1"``–``"10"``, ``"C1"``–``"C4"`` or ``"4"``–``"8"``.
    requirement : str
        What the item asks, in our words.
    answers : tuple of (str, str)
        ``(family name, text)`` per family, or one ``("all", text)`` when every family has the
        same answer.
    recorded : bool
        False when any part of any answer is :data:`NOT_RECORDED`.
    unrecorded_outside_search : bool
        True when a :data:`NOT_RECORDED` answer belongs to a family that ``showwork search`` did not
        run (a results file, other programs' MLflow runs): running the search with showwork would
        record it. False when every missing detail is of a showwork search.
    """

    checklist: str
    number: str
    requirement: str
    answers: tuple[tuple[str, str], ...]
    recorded: bool
    unrecorded_outside_search: bool = False


_ITEMS: tuple[tuple[str, str, str, Callable[[Facts], Answer]], ...] = (
    (DODGE, "1", "On what hardware and software platform did the experiments run?", answers.infrastructure),
    (DODGE, "2", "How long does one training run of each approach take on average?", answers.runtime),
    (DODGE, "3", "Which data, and how many training, validation and test examples, were used?", answers.splits),
    (DODGE, "4", "What validation score goes with each reported test score?", answers.scores),
    (DODGE, "5", "Where is the code that produced the results?", answers.code),
    (DODGE, "6", "Over which range, and with which distribution, was each hyperparameter searched?", answers.space),
    (DODGE, "7", "Which hyperparameter values did the best models use?", answers.best_configuration),
    (DODGE, "8", "How many hyperparameter settings were tried?", answers.trials),
    (DODGE, "9", "How were hyperparameter values picked, and what score decided among them?", answers.selection),
    (DODGE, "10", "How does the expected best validation score change with the number of trials?", answers.expected_performance),
    (ARR, "C1", "How big are the models, how much computation did the experiments take in all, and on what machines?", answers.compute_and_size),
    (ARR, "C2", "How were the experiments set up: the hyperparameter search, the best values it found, and which dataset"
                " was used to determine the hyperparameters?", answers.setup),
    (ARR, "C3", "Which summary statistics describe the results, and is it clear whether a number is a maximum, a mean or one run?", answers.descriptive_statistics),
    (ARR, "C4", "Which existing software packages were used, in which versions?", answers.packages),
    (NEURIPS, "4", "Is enough disclosed to reproduce the main experimental results?", answers.reproduction),
    (NEURIPS, "5", "Can readers obtain the code and data needed to rerun the experiments?", answers.open_access),
    (NEURIPS, "6", "Are the data splits, the hyperparameters and the way they were chosen described?", answers.training_details),
    (NEURIPS, "7", "Do the results carry error bars or confidence statements, with what they capture and what they assume?", answers.significance),
    (NEURIPS, "8", "What compute did the experiments need: kind of worker, memory, time per run and in total?", answers.resources),
)


def build_checklist(report: Report) -> tuple[ChecklistItem, ...]:
    """Answer every item of the three checklists from what ``report``'s searches recorded.

    Parameters
    ----------
    report : Report
        From :func:`showwork.report.analysis.analyze`.

    Returns
    -------
    tuple of ChecklistItem
        Always 19 items, in order: Dodge et al. (2019) Text Box 1 items 1–10, ACL Rolling
        Review C1–C4, NeurIPS checklist items 4–8. Each answer has one ``(family, text)`` per
        family, or one ``("all", text)`` when every family's text is the same. Whatever a search
        did not record (results files record only their trials) reads :data:`NOT_RECORDED`, and
        the item's ``recorded`` is False.
    """
    facts = [family_facts(family, report) for family in report.families]
    items = []
    for checklist, number, requirement, answer in _ITEMS:
        answered = [(f.family.name, *answer(f)[:2]) for f in facts]
        texts = {text for _, text, _ in answered}
        if len(texts) == 1:
            answers: tuple[tuple[str, str], ...] = ((ALL_FAMILIES, texts.pop()),)
        else:
            answers = tuple((name, text) for name, text, _ in answered)
        recorded = all(ok for _, _, ok in answered)
        # A family with a spec was run with showwork search: telling its user to run one would be wrong.
        outside = any(not ok and not f.spec for f, (_, _, ok) in zip(facts, answered))
        items.append(ChecklistItem(checklist, number, requirement, answers, recorded, outside))
    return tuple(items)


def checklist_tables(items: Sequence[ChecklistItem]) -> tuple[Table, ...]:
    """One table per checklist among ``items`` (keys ``checklist_dodge``, ``checklist_arr``, ``checklist_neurips``).

    Columns ``item``, ``requirement``, ``answer``; an item with one answer per family takes one row
    per family (``"Family: text"``), the item and requirement on its first row only. Cells are plain
    text: the renderers escape them.
    """
    tables = []
    for checklist in CHECKLISTS:
        mine = [item for item in items if item.checklist == checklist]
        if not mine:
            continue
        rows = []
        for item in mine:
            for i, (family, text) in enumerate(item.answers):
                answer = text if family == ALL_FAMILIES else f"{family}: {text}"
                rows.append((item.number, item.requirement, answer) if i == 0 else ("", "", answer))
        outside = [item.number for item in mine if not item.recorded and item.unrecorded_outside_search]
        searched = [item.number for item in mine if not item.recorded and not item.unrecorded_outside_search]
        notes = [f"Requirements paraphrased from {checklist}; every answer is read from what the searches recorded."]
        if outside:
            notes.append(
                f"Items {', '.join(outside)}: “{NOT_RECORDED}” marks what the searches did not record (results files"
                " record only their trials); state it by hand, or run the search with showwork search, which records it."
            )
        if searched:
            notes.append(
                f"Items {', '.join(searched)}: “{NOT_RECORDED}” marks what showwork search could not record for these"
                " searches (a detail the trainable did not return, a probe that found nothing, or a search recorded"
                " by an earlier showwork); state it by hand."
            )
        key, title = _TABLES[checklist]
        tables.append(Table(key, title, ("item", "requirement", "answer"), tuple(rows), tuple(notes)))
    return tuple(tables)

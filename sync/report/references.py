"""What still names the model groups a plan leaves without routes (sync/core/references.py),
as text lines and as markdown: for each group every reference, where it lives and its effect
on requests, marked refused or warning; the probable renames; what was not fully read and what
no API shows. The JSON format carries the same as the plan's `references` object."""

from __future__ import annotations

from sync.core.plan import Plan
from sync.secrets.display import code


def references_text(plan: Plan) -> list[str]:
    refs = plan.references
    if refs is None:
        return []
    out = [f"references to model groups the plan leaves with no routes ({', '.join(refs.groups)}):"]
    for group in refs.groups:
        found = refs.of(group)
        out.append(f"  {group}: {len(found) or 'no'} reference(s) found")
        out += [f"    {'!' if r.refuses else '~'} {r.line()}" for r in found]
        out += [
            f"    probably renamed to {new}: " + _rename_tail(len(found))
            for old, new in refs.renames
            if old == group
        ]
    out += [f"  not fully read: {why}" for why in refs.unread]
    out += [f"  not checkable: {what}" for what in refs.unchecked]
    return out


def references_markdown(plan: Plan) -> list[str]:
    refs = plan.references
    if refs is None:
        return []
    out = [f"#### References to model groups left with no routes ({len(refs.groups)})", ""]
    for group in refs.groups:
        found = refs.of(group)
        out.append(f"- {code(group)}: {len(found) or 'no'} reference(s) found")
        for r in found:
            mark = "⛔ refused" if r.refuses else "⚠️ warning"
            out.append(f"  - {mark}: {r.kind} in {code(r.holder)} ({r.lives}): {code(r.effect)}")
        out += [
            f"  - probably renamed to {code(new)}: {_rename_tail(len(found))}"
            for old, new in refs.renames
            if old == group
        ]
    out += [f"- not fully read: {code(why)}" for why in refs.unread]
    out += [f"- not checkable: {code(what)}" for what in refs.unchecked]
    return [*out, ""]


def _rename_tail(found: int) -> str:
    return (
        f"the {found} reference(s) above still name the old group; point them at the new one"
        if found
        else "nothing found names the old group"
    )

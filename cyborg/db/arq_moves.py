"""Binds that move accelerator requests into another project's quota."""

import sqlalchemy as sa

from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.db import quota_usage
from cyborg.db import session
from cyborg.db.session import main

# NOTE(quota): from microversion 2.1 a bind may carry /project_id (admins
# only): the ARQ then counts against that project. A move is checked as a
# create is, against the receiving project: before the write, in the
# same transaction, so a refusal leaves nothing written; and once more
# after the commit (``give_back`` undoes it) for a concurrent request that
# took the same quota.


def _moving(session, bindings):
    """``({receiving project: demand}, {uuid: project before})`` of the
    ARQs that ``bindings`` move to another project."""
    targets = {uuid: binding['project_id']
               for uuid, binding in bindings.items()
               if binding.get('project_id')}
    if not targets:
        return {}, {}
    rows = session.scalars(
        sa.select(models.AcceleratorRequest)
        .where(models.AcceleratorRequest.uuid.in_(sorted(targets)))
        .order_by(models.AcceleratorRequest.id)).all()
    by_project, before = {}, {}
    for row in rows:
        if row.project_id != targets[row.uuid]:
            by_project.setdefault(targets[row.uuid], []).append(row)
            before[row.uuid] = row.project_id
    demands = {project: quota_usage.arqs_demand(session, moved)
               for project, moved in by_project.items()}
    return {project: demand for project, demand in demands.items()
            if demand}, before


@session.retry_on_conflict
@main.writer
def start_bind(context, bindings, check, project_id=None, owner=None):
    """``arqs.start_bind``, once ``check(context, project, demand)`` let
    each project that the bindings move ARQs into take them.

    :returns: ``(started, failed, {project: demand}, {uuid: project
        before})``: what ``arqs.start_bind`` returns, then the moves.
    :raises: what ``check`` raises (QuotaExceeded): nothing is written.
    """
    demands, before = _moving(context.session, bindings)
    for project, demand in sorted(demands.items()):
        check(context, project, demand)
    started, failed = arq_db.start_bind(context, bindings, project_id,
                                        owner)
    return started, failed, demands, before


@session.retry_on_conflict
@main.writer
def give_back(context, before):
    """Undo the binds that moved these ARQs: unbound, each back in its
    project (``{uuid: project}``). Only before their host-side work: a
    handle is released in the database, and no agent is asked to."""
    arq_db.unbind(context, sorted(before))
    for row in context.session.scalars(
            sa.select(models.AcceleratorRequest)
            .where(models.AcceleratorRequest.uuid.in_(sorted(before)))):
        row.project_id = before[row.uuid]

"""Which state of its tables an open index reads, as LanceDB tells it, and whether its folder now holds a newer one.

A table's state is its version (`Table.version`) with the ids of its search structures (`Table.list_indices`): every
write moves the version on, and an index built again in the same folder, whose versions count from 1 again, has new
search structures. `LatestVersions` keeps handles of its own on the tables and moves them to their latest version
(`Table.checkout_latest`): a server compares that with what it opened (`opened`) and opens the index again when they
differ, so that an add (whose cleanup removes what older versions used) is followed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .store import OCCURRENCES, TEXTS, OccurrenceIndex

TableState = tuple[str, int, frozenset[str]]  # table name, version, ids of its search structures
State = tuple[TableState, ...]


def state_of(tables: Mapping[str, Any]) -> State:
    """The version and search structures of each table, as the given handles read them."""
    return tuple(
        (name, int(table.version), frozenset(str(i.index_uuid) for i in table.list_indices()))
        for name, table in sorted(tables.items())
    )


def opened(index: OccurrenceIndex) -> State:
    """What the open `index` reads (its tables stay at the version they were opened at)."""
    return state_of(index.tables)


class LatestVersions:
    """Handles on an index's tables, apart from the index's own, that follow the latest version on disk.

    Not thread-safe: a caller shares it under a lock.
    """

    def __init__(self, index: OccurrenceIndex) -> None:
        self.tables = {name: index.db.open_table(name) for name in (TEXTS, OCCURRENCES)}

    def now(self) -> State | None:
        """The tables' latest state, or None when LanceDB cannot read it now (the tables being built again)."""
        try:
            for table in self.tables.values():
                table.checkout_latest()
            return state_of(self.tables)
        except (OSError, ValueError, RuntimeError):  # lance reports a table gone as RuntimeError
            return None

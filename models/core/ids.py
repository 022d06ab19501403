"""``column IN (ids)`` for a list of ids bound as one value, whatever its length.

SQLite gets an ordinary expanding ``IN (?, ?, ...)``. On PostgreSQL a list of hundreds of ids
expanded into as many placeholders makes a statement whose text differs with each length
and that psycopg parses again at every call; ``= ANY(:ids)`` binds the list as one array,
so the statement is the same text every time.
"""

from sqlalchemy import ARRAY, BigInteger, Boolean, any_, bindparam
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal


class IdsIn(ColumnElement):
    """``column`` is one of the ids bound as ``name`` (a list)."""

    __visit_name__ = "ids_in"
    inherit_cache = True
    type = Boolean()
    _is_implicitly_boolean = True
    _traverse_internals = [("column", InternalTraversal.dp_clauseelement), ("name", InternalTraversal.dp_string)]

    def __init__(self, column, name: str):
        self.column = column
        self.name = name


def ids_in(column, name: str) -> IdsIn:
    return IdsIn(column, name)


@compiles(IdsIn)
def _expanding(element: IdsIn, compiler, **kw) -> str:
    return compiler.process(element.column.in_(bindparam(element.name, expanding=True)), **kw)


@compiles(IdsIn, "postgresql")
def _any_array(element: IdsIn, compiler, **kw) -> str:
    return compiler.process(element.column == any_(bindparam(element.name, type_=ARRAY(BigInteger))), **kw)

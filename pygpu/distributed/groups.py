"""Process groups as torch.distributed has them: the default group, new_group, subgroups,
and the rank arithmetic between them.

The default group (group.WORLD) is made by init_process_group over MPI's COMM_WORLD. A
group made by new_group is an MPI communicator split from the world: every rank of the
world calls new_group (MPI_Comm_split, as PyTorch requires every rank to call it), or,
with use_local_synchronization=True, only its members do (MPI_Comm_create_group). A rank
outside the group gets GroupMember.NON_GROUP_MEMBER, and a collective called with it
returns at once, as in PyTorch.

src/dst arguments are global ranks (ranks of the world); group_src/group_dst are ranks
within the group."""
import warnings

from ._group import DistributedError, ProcessGroup


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """torch.distributed.GroupMember: WORLD (the default group, None before init) and
    NON_GROUP_MEMBER (what new_group returns on a rank outside the group)."""
    WORLD = None
    NON_GROUP_MEMBER = _NonMember()


class group:  # noqa: N801 - torch.distributed.group.WORLD is spelled so
    WORLD = None


_world = None
_groups = []  # every group made by new_group on this rank, for destroy_process_group


def set_world(pg):
    global _world
    _world = pg
    GroupMember.WORLD = group.WORLD = pg


def world():
    return _world


class NotInitializedError(DistributedError, ValueError):
    """The default group does not exist yet (PyTorch raises ValueError)."""


def require():
    if _world is None:
        raise NotInitializedError("Default process group has not been initialized, please make sure "
                               "to call init_process_group (pygpu.distributed.init_process_group)")
    return _world


def resolve(g):
    """The ProcessGroup a collective runs on (None: the default), or None when this rank is
    not a member (the collective then does nothing, as PyTorch's does)."""
    world_pg = require()
    if g is None or g is GroupMember.WORLD:
        return world_pg
    if g is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(g, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group (or None), got "
                        f"{type(g).__name__}")
    return g


def warn_not_in_group(op):
    warnings.warn(f"Running {op} on global rank {_world.rank()} which does not belong to the "
                  "given group.", stacklevel=3)


def group_rank_of(pg, global_rank, group_rank, default_zero=False):
    """torch's _canonicalize_group_rank: a rank within pg, from exactly one of a global
    rank and a group rank (both None: global rank 0 where PyTorch defaults to it, else an
    error)."""
    if default_zero and global_rank is None and group_rank is None:
        global_rank = 0
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        pg.global_rank(group_rank)  # checks it
        return int(group_rank)
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    return pg.group_rank(global_rank)


# -- torch's queries --------------------------------------------------------------------------
def get_rank(group=None):
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_group_rank(group, global_rank):
    pg = resolve(group)
    if pg is None:
        raise ValueError(f"Group {group} is not part of this rank's groups")
    return pg.group_rank(global_rank)


def get_global_rank(group, group_rank):
    pg = resolve(group)
    if pg is None:
        raise ValueError(f"Group {group} is not part of this rank's groups")
    return pg.global_rank(group_rank)


def get_process_group_ranks(group):
    pg = resolve(group)
    if pg is None:
        raise ValueError(f"Group {group} is not part of this rank's groups")
    return list(pg.ranks)


def get_backend(group=None):
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


# -- making groups ----------------------------------------------------------------------------
def _check_ranks(ranks, size):
    ranks = [int(r) for r in ranks]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} has duplicates")
    bad = [r for r in ranks if not 0 <= r < size]
    if bad:
        raise ValueError(f"new_group: ranks {bad} are not ranks of the world (0..{size - 1})")
    return ranks


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None, sort_ranks=True):
    """A group of `ranks` (global ranks; None: all). Every rank of the world calls it, in the
    same order, unless use_local_synchronization=True (then only the members). Returns
    GroupMember.NON_GROUP_MEMBER on a rank outside it."""
    from mpi4py import MPI
    world_pg = require()
    ranks = list(range(world_pg.size())) if ranks is None else _check_ranks(ranks, world_pg.size())
    if sort_ranks:
        ranks = sorted(ranks)
    me = world_pg.rank()
    backend = backend or world_pg.backend
    timeout = world_pg.timeout_s if timeout is None else timeout
    if use_local_synchronization:
        if me not in ranks:
            return GroupMember.NON_GROUP_MEMBER
        members = world_pg.comm.Get_group().Incl(ranks)
        comm = world_pg.comm.Create_group(members)
        members.Free()
    else:
        comm = world_pg.comm.Split(0 if me in ranks else MPI.UNDEFINED,
                                   ranks.index(me) if me in ranks else 0)
        if me not in ranks:
            return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, backend, ranks, timeout, name=group_desc or "")
    _groups.append(pg)
    return pg


def _split(parent, member_lists, timeout, backend, desc):
    """One MPI_Comm_split of `parent` (a ProcessGroup) into the disjoint member_lists (global
    ranks); returns (this rank's group or None, the list with NON_GROUP_MEMBER elsewhere)."""
    from mpi4py import MPI
    me = _world.rank()
    color, key = MPI.UNDEFINED, 0
    for i, members in enumerate(member_lists):
        if me in members:
            color, key = i, members.index(me)
    comm = parent.comm.Split(color, key)
    mine, out = None, []
    for i, members in enumerate(member_lists):
        if i == color:
            mine = ProcessGroup(comm, backend or parent.backend, members,
                                parent.timeout_s if timeout is None else timeout, name=desc or "")
            _groups.append(mine)
            out.append(mine)
        else:
            out.append(GroupMember.NON_GROUP_MEMBER)
    return mine, out


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split the world (or `group`) into subgroups of group_size consecutive ranks (default:
    the ranks of one machine, LOCAL_WORLD_SIZE). Returns (this rank's subgroup, all
    subgroups), the others as GroupMember.NON_GROUP_MEMBER on this rank."""
    import os
    parent = resolve(group)
    if parent is None:
        raise ValueError("new_subgroups: this rank is not in `group`")
    if group_size is None:
        group_size = int(os.environ.get("LOCAL_WORLD_SIZE", parent.size()))
    if group_size <= 0:
        raise ValueError("The arg 'group_size' must be a positive integer")
    if group_size > parent.size():
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({parent.size()})")
    if parent.size() % group_size != 0:
        raise ValueError("The world size must be divisible by 'group_size'")
    lists = [parent.ranks[i:i + group_size] for i in range(0, parent.size(), group_size)]
    return _split(parent, lists, timeout, backend, group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """Subgroups of the given (disjoint) lists of global ranks. Returns (this rank's subgroup
    or None, all subgroups)."""
    world_pg = require()
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    lists, seen = [], set()
    for ranks in ranks_per_subgroup_list:
        ranks = _check_ranks(ranks, world_pg.size())
        for r in ranks:
            if r in seen:
                raise ValueError(f"Rank {r} has appeared in both subgroup {ranks} and another")
            seen.add(r)
        lists.append(ranks)
    return _split(world_pg, lists, timeout, backend, group_desc)


def destroy(g=None):
    """destroy_process_group: g None destroys every group and the default one."""
    global _groups
    if g is None:
        for pg in _groups:
            pg.close()
        _groups = []
        if _world is not None:
            _world.close()
        set_world(None)
        return
    pg = resolve(g)
    if pg is None:
        return
    if pg is _world:
        return destroy(None)
    pg.close()
    _groups = [x for x in _groups if x is not pg]

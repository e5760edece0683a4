"""A stack bag's own topics read as the stack's types, whichever generation of the stack recorded them.

A bag recorded since the stack has its own message types holds ``parkour_interfaces`` messages;
an older one JSON strings and a packed array (:mod:`parkour_bringup.bag.legacy`). Each reader takes
a :class:`BagMessage` of either kind and returns the same thing for both; a message it cannot read
is a ValueError that says which.
"""

from __future__ import annotations

from typing import Any

from parkour_bringup.bag import legacy
from parkour_bringup.bag.reader import BagMessage
from parkour_control.messages import tick_inputs_from_message
from parkour_core.stamps import stamp_seconds
from parkour_core.tick_inputs import TickInputs
from parkour_safety.messages import transition_from_message


def tick_inputs(m: BagMessage) -> TickInputs:
    if m.msgtype == legacy.PACKED:
        return legacy.tick_inputs_from_packed(m.msg)
    return tick_inputs_from_message(m.msg)


def transition(m: BagMessage) -> dict[str, Any]:
    """{"t", "from", "to", "reason"} of a /supervisor/transition message."""
    if m.msgtype == legacy.STRING:
        return legacy.transition_from_json(m.msg)
    return transition_from_message(m.msg)


def bundle(m: BagMessage) -> tuple[str, str]:
    """(name, path) of a /policy/bundle announcement."""
    if m.msgtype == legacy.STRING:
        return legacy.bundle_from_json(m.msg)
    return str(m.msg.name), str(m.msg.path)


def band(m: BagMessage) -> tuple[bool, float]:
    """(released, sim time of the change) of a /sim/band message."""
    if m.msgtype == legacy.STRING:
        return legacy.band_from_json(m.msg)
    return bool(m.msg.released), stamp_seconds(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec)


def mode(m: BagMessage) -> str:
    """The mode name of a /supervisor/state message."""
    return str(m.msg.data if m.msgtype == legacy.STRING else m.msg.mode)

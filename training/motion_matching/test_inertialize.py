import numpy as np

from training.motion_matching.inertialize import Offset, step, transition


def test_inertialization_removes_the_velocity_jump():
    fps, dt, hl = 50.0, 0.02, 0.1
    t = np.arange(60) * dt
    src = np.sin(2 * t)  # the clip we leave
    dst = 2.0 + 0.5 * t  # the clip we switch to at frame 30: position and velocity jump
    s = 30
    raw = np.concatenate([src[:s], dst[s:]])
    off = Offset.zeros(1)
    out = list(src[:s])
    src_v = (src[s] - src[s - 1]) * fps
    dst_v = (dst[s + 1] - dst[s]) * fps
    off = transition(off, np.array([src[s]]), np.array([src_v]), np.array([dst[s]]), np.array([dst_v]))
    for k in range(s, 60):
        off = step(off, hl, dt)
        out.append(dst[k] + off.x[0])
    result = np.array(out)

    def jump(q):
        return abs((q[s] - q[s - 1]) - (q[s - 1] - q[s - 2])) * fps

    assert jump(raw) > 30.0
    assert jump(result) < 0.05 * jump(raw)  # what is left is the spring acting over one frame
    assert abs(result[-1] - dst[-1]) < 1e-2  # and it converges onto the new clip


def test_transition_accumulates_offsets():
    off = transition(
        Offset(np.array([0.1]), np.array([1.0])), np.array([1.0]), np.array([0.0]), np.array([0.5]), np.array([2.0])
    )
    np.testing.assert_allclose(off.x, [0.6])
    np.testing.assert_allclose(off.v, [-1.0])

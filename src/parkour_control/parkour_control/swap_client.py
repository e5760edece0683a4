"""Ask a running policy_node to swap models: the same SetParameters call as
``ros2 param set /policy_node bundle <bundle>``, used by ``parkour model swap`` and the script node.
The policy node's name is relative: the caller's namespace is the graph's."""

from __future__ import annotations

from typing import Any

from parkour_core.interfaces import node as node_spec

POLICY_NODE = node_spec("policy").executable


def make_swap_request(bundle: str) -> Any:
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    request = SetParameters.Request()
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=bundle)
    request.parameters = [Parameter(name="bundle", value=value)]
    return request


def swap_client(node: Any, policy_node: str = POLICY_NODE) -> Any:
    from rcl_interfaces.srv import SetParameters

    return node.create_client(SetParameters, f"{policy_node}/set_parameters")


def swap_result(response: Any) -> tuple[bool, str]:
    result = response.results[0]
    return bool(result.successful), str(result.reason)


def request_swap(node: Any, bundle: str, timeout_s: float, policy_node: str = POLICY_NODE) -> tuple[bool, str]:
    """Blocking: spins ``node`` until the policy node answers (it answers after the switch)."""
    import rclpy

    client = swap_client(node, policy_node)
    if not client.wait_for_service(timeout_sec=min(timeout_s, 10.0)):
        return (
            False,
            f"no {client.service_name} answers on this ROS_DOMAIN_ID (is the graph running, in this namespace?)",
        )
    future = client.call_async(make_swap_request(bundle))
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout_s)
    if not future.done():
        return False, f"{client.service_name} did not answer within {timeout_s:.0f} s"
    return swap_result(future.result())

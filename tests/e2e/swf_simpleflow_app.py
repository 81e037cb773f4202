"""The simpleflow application test_swf_simpleflow.py runs against statelog: activities and one
workflow, as a simpleflow user writes them. simpleflow's own decider and worker processes
import this module by name (`swf_simpleflow_app.OrderFlow`, `swf_simpleflow_app.validate`), so
it sits on their PYTHONPATH; pytest does not collect it (no `test_` prefix).

The workflow: validate the order, charge it, wait on a 1 s timer, wait for the `approved`
signal, then ship it on a second activity task list (`sf-shipping`).
"""

from simpleflow import Workflow, activity, futures

MAIN_LIST = "sf-main"
SHIPPING_LIST = "sf-shipping"
DECISIONS_LIST = "sf-decisions"

TIMEOUTS = {
    "start_to_close_timeout": 30,
    "schedule_to_start_timeout": 30,
    "schedule_to_close_timeout": 60,
    "heartbeat_timeout": 30,
}


@activity.with_attributes(task_list=MAIN_LIST, version="1", **TIMEOUTS)
def validate(order):
    if not order.get("items"):
        raise ValueError("an order has items")
    return dict(order, valid=True)


@activity.with_attributes(task_list=MAIN_LIST, version="1", **TIMEOUTS)
def charge(order, amount):
    return {"order": order["id"], "charged": amount * len(order["items"])}


@activity.with_attributes(task_list=SHIPPING_LIST, version="1", **TIMEOUTS)
def ship(order, charged):
    return f"shipped {order['id']} ({charged['charged']} charged)"


class OrderFlow(Workflow):
    name = "sf-order"
    version = "1"
    task_list = DECISIONS_LIST

    def run(self, order):
        valid = self.submit(validate, order)
        charged = self.submit(charge, valid.result, 5)
        futures.wait(self.submit(self.start_timer("cool-off", 1)))
        approval = self.submit(self.wait_signal("approved"))
        futures.wait(approval)
        shipped = self.submit(ship, valid.result, charged.result)
        return shipped.result

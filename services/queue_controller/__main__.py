from muster.service import service_main

from services.queue_controller.app import run

if __name__ == "__main__":
    service_main("queue-controller", run)

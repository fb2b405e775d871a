from muster.service import service_main

from services.nodewatch.app import run

if __name__ == "__main__":
    service_main("nodewatch", run)

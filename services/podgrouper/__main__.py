from muster.service import service_main

from services.podgrouper.app import run

if __name__ == "__main__":
    service_main("podgrouper", run)

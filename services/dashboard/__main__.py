from muster.service import service_main

from services.dashboard.app import run

if __name__ == "__main__":
    service_main("dashboard", run)

from muster.service import service_main

from services.projector.app import run

if __name__ == "__main__":
    service_main("projector", run)

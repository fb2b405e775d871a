from muster.service import service_main

from services.binder.app import run

if __name__ == "__main__":
    service_main("binder", run)

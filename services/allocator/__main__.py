from muster.service import service_main

from services.allocator.app import run

if __name__ == "__main__":
    service_main("allocator", run)

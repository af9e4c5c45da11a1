import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "station"))  # station_helpers
sys.path.insert(0, str(Path(__file__).parent))  # outcome_server
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))  # api_helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))  # gateway_helpers

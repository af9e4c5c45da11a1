import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "station"))
sys.path.insert(0, str(Path(__file__).parents[1] / "api"))
sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))  # uri_server

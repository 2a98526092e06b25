"""scripts/train_fixture_models.py loaded as a module (`from train_script import tfm`) for the
training tests of this folder, which run as scripts (their folder is on sys.path)."""
import importlib.util
import os

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                     "train_fixture_models.py")
_spec = importlib.util.spec_from_file_location("tfm", _PATH)
tfm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tfm)

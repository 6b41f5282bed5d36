"""The update engine: Step, the update orders, objectives, regularizers and what they need.

It imports torch only, and nothing from ganstep's other wings."""

"""The build's stages: the forward pass (:mod:`.forward`), the backward pass (:mod:`.backward`),
the final merge (:mod:`.merge`) and the driver that runs them as resumable steps (:mod:`.build`)."""

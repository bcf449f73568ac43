"""Voices: the preset voices of the speech models and the custom voices a workspace stores from
a sample (`/v1/audio/voices`, `/v2/audio/voices`)."""

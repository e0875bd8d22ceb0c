"""Waveform-level DVB-S2 calibration of the emulator's PER(Es/N0) tables (`satlab phy`)."""

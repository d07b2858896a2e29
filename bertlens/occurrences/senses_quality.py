"""How good the senses are: pseudo-word disambiguation and agreement with WiC's same/different labels."""

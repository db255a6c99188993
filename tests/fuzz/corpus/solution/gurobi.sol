# Objective value = 6.5
s_0_1 1
s_1_1 1
s_2_1 1
s_3_1 1
